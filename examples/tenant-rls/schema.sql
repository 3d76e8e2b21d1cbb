-- Orders of several tenants in one table, isolated by PostgreSQL's
-- row-level security. Run it as a role that may create roles (postgres),
-- in the schema that search_path selects (public by default):
--   psql "$ADMIN_URL" -v ON_ERROR_STOP=1 -f schema.sql
--
-- Three roles, cluster-wide (created once; running the file again keeps
-- them):
--   orders_mcpd     mcpd's login (the DSN's user). NOINHERIT: on its own it
--                   may read nothing; each call first switches to a role
--                   below, the one the caller's db_role claim names.
--   orders_member   reads and adds its tenant's orders (app.tenant).
--   orders_auditor  reads every tenant's orders.
DO $$ BEGIN CREATE ROLE orders_mcpd LOGIN NOINHERIT; EXCEPTION WHEN duplicate_object THEN NULL; END $$;
DO $$ BEGIN CREATE ROLE orders_member NOLOGIN; EXCEPTION WHEN duplicate_object THEN NULL; END $$;
DO $$ BEGIN CREATE ROLE orders_auditor NOLOGIN; EXCEPTION WHEN duplicate_object THEN NULL; END $$;
GRANT orders_member, orders_auditor TO orders_mcpd;

CREATE TABLE orders (
  id         bigserial PRIMARY KEY,
  tenant     text NOT NULL,
  item       text NOT NULL,
  total      numeric(10, 2) NOT NULL CHECK (total >= 0),
  created_at timestamptz NOT NULL DEFAULT now()
);

INSERT INTO orders (tenant, item, total) VALUES
  ('acme', 'Anvil', 120.00),
  ('acme', 'Rocket skates', 349.90),
  ('acme', 'Giant magnet', 75.50),
  ('globex', 'Hammock', 89.00),
  ('globex', 'Flamethrower', 1999.99);

-- The policies: a member sees and writes the rows of the tenant in
-- app.tenant, which mcpd sets from the caller's claim in each call's
-- transaction (unset: NULL, so no rows); an auditor reads them all. The
-- table's owner is not subject to them: mcpd never connects as it.
ALTER TABLE orders ENABLE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON orders
  USING (tenant = current_setting('app.tenant', true))
  WITH CHECK (tenant = current_setting('app.tenant', true));
CREATE POLICY auditor_reads_all ON orders FOR SELECT TO orders_auditor USING (true);

GRANT SELECT, INSERT ON orders TO orders_member;
GRANT USAGE ON SEQUENCE orders_id_seq TO orders_member;
GRANT SELECT ON orders TO orders_auditor;
DO $$ BEGIN
  EXECUTE format('GRANT USAGE ON SCHEMA %I TO orders_member, orders_auditor', current_schema());
END $$;
