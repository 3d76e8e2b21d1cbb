-- What fills a new database: mcpd runs this once, when the file has no
-- tables yet. Delete __PROJECT__.db (in .mcpd/, or $MCPD_DATA_DIR) to start over.

CREATE TABLE items (
  id       INTEGER PRIMARY KEY,
  name     TEXT    NOT NULL,
  price    REAL    NOT NULL,
  in_stock INTEGER NOT NULL DEFAULT 0
);

INSERT INTO items (name, price, in_stock) VALUES
  ('Desk lamp', 29.90, 12),
  ('Notebook', 4.50, 200),
  ('Fountain pen', 45.00, 7);
