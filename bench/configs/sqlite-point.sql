-- The 10,000-row table of the SQLite point-query benchmark
-- (bench/configs/sqlite-point.hcl), created on the server's first call.
CREATE TABLE items (
  id    INTEGER PRIMARY KEY,
  name  TEXT    NOT NULL,
  price REAL    NOT NULL,
  stock INTEGER NOT NULL,
  added TEXT    NOT NULL
);
WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 10000)
INSERT INTO items (id, name, price, stock, added)
SELECT i, 'Item number ' || i, (i % 5000) / 100.0 + 0.99, i % 37, '2026-01-02 03:04:05' FROM n;
