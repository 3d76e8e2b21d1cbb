-- The mcpd demo database: a small bookshop.
--
-- mcpd runs this script once, in one transaction, when the demo's SQLite
-- database has no tables yet (see docs/adapter-sql.md, `seed`). To start
-- over, stop mcpd and delete the database file (.mcpd/demo.db).

CREATE TABLE authors (
  id      INTEGER PRIMARY KEY,
  name    TEXT    NOT NULL,
  country TEXT    NOT NULL,
  born    INTEGER NOT NULL
);

CREATE TABLE books (
  id        INTEGER PRIMARY KEY,
  title     TEXT    NOT NULL,
  author_id INTEGER NOT NULL REFERENCES authors (id),
  genre     TEXT    NOT NULL CHECK (genre IN ('fiction', 'science-fiction', 'fantasy', 'mystery', 'poetry', 'non-fiction')),
  year      INTEGER NOT NULL,
  pages     INTEGER NOT NULL,
  price     REAL    NOT NULL CHECK (price > 0),
  in_stock  INTEGER NOT NULL DEFAULT 0 CHECK (in_stock >= 0)
);
CREATE INDEX books_author ON books (author_id);
CREATE INDEX books_genre ON books (genre);

CREATE TABLE customers (
  id     INTEGER PRIMARY KEY,
  name   TEXT NOT NULL,
  city   TEXT NOT NULL,
  joined DATE NOT NULL
);

CREATE TABLE orders (
  id          INTEGER PRIMARY KEY,
  customer_id INTEGER  NOT NULL REFERENCES customers (id),
  ordered_at  DATETIME NOT NULL,
  status      TEXT     NOT NULL CHECK (status IN ('pending', 'shipped', 'delivered', 'cancelled'))
);
CREATE INDEX orders_customer ON orders (customer_id);

CREATE TABLE order_items (
  order_id   INTEGER NOT NULL REFERENCES orders (id),
  book_id    INTEGER NOT NULL REFERENCES books (id),
  quantity   INTEGER NOT NULL CHECK (quantity > 0),
  unit_price REAL    NOT NULL,
  PRIMARY KEY (order_id, book_id)
);
CREATE INDEX order_items_book ON order_items (book_id);

-- One row per book sold in an order that was not cancelled.
CREATE VIEW sales AS
SELECT o.id                          AS order_id,
       o.ordered_at                  AS ordered_at,
       strftime('%Y-%m', o.ordered_at) AS month,
       o.status                      AS status,
       c.city                        AS city,
       b.id                          AS book_id,
       b.title                       AS title,
       b.genre                       AS genre,
       a.name                        AS author,
       i.quantity                    AS quantity,
       i.quantity * i.unit_price     AS revenue
FROM order_items i
JOIN orders o    ON o.id = i.order_id
JOIN customers c ON c.id = o.customer_id
JOIN books b     ON b.id = i.book_id
JOIN authors a   ON a.id = b.author_id
WHERE o.status <> 'cancelled';

INSERT INTO authors (id, name, country, born) VALUES
  (1,  'Ursula K. Le Guin',  'United States', 1929),
  (2,  'Italo Calvino',      'Italy',         1923),
  (3,  'Agatha Christie',    'United Kingdom', 1890),
  (4,  'Octavia E. Butler',  'United States', 1947),
  (5,  'Jorge Luis Borges',  'Argentina',     1899),
  (6,  'Toni Morrison',      'United States', 1931),
  (7,  'Stanisław Lem',      'Poland',        1921),
  (8,  'J. R. R. Tolkien',   'United Kingdom', 1892),
  (9,  'Wisława Szymborska', 'Poland',        1923),
  (10, 'Pablo Neruda',       'Chile',         1904),
  (11, 'Carl Sagan',         'United States', 1934),
  (12, 'Rachel Carson',      'United States', 1907),
  (13, 'Dorothy L. Sayers',  'United Kingdom', 1893),
  (14, 'Haruki Murakami',    'Japan',         1949);

INSERT INTO books (id, title, author_id, genre, year, pages, price, in_stock) VALUES
  (1,  'A Wizard of Earthsea',                     1,  'fantasy',         1968, 183, 9.99,  12),
  (2,  'The Left Hand of Darkness',                1,  'science-fiction', 1969, 304, 12.50, 7),
  (3,  'The Dispossessed',                         1,  'science-fiction', 1974, 387, 13.99, 4),
  (4,  'Invisible Cities',                         2,  'fiction',         1972, 165, 11.00, 9),
  (5,  'If on a winter''s night a traveler',       2,  'fiction',         1979, 260, 12.00, 3),
  (6,  'Murder on the Orient Express',             3,  'mystery',         1934, 256, 8.99,  15),
  (7,  'And Then There Were None',                 3,  'mystery',         1939, 272, 8.99,  11),
  (8,  'The Murder of Roger Ackroyd',              3,  'mystery',         1926, 312, 9.49,  0),
  (9,  'Kindred',                                  4,  'science-fiction', 1979, 264, 14.00, 6),
  (10, 'Parable of the Sower',                     4,  'science-fiction', 1993, 345, 15.00, 8),
  (11, 'Ficciones',                                5,  'fiction',         1944, 174, 13.00, 5),
  (12, 'The Aleph',                                5,  'fiction',         1949, 210, 13.50, 2),
  (13, 'Beloved',                                  6,  'fiction',         1987, 324, 14.99, 10),
  (14, 'Song of Solomon',                          6,  'fiction',         1977, 337, 13.99, 4),
  (15, 'Solaris',                                  7,  'science-fiction', 1961, 204, 11.99, 5),
  (16, 'The Cyberiad',                             7,  'science-fiction', 1965, 295, 12.99, 1),
  (17, 'The Hobbit',                               8,  'fantasy',         1937, 310, 10.99, 20),
  (18, 'The Fellowship of the Ring',               8,  'fantasy',         1954, 423, 16.99, 9),
  (19, 'View with a Grain of Sand',                9,  'poetry',          1995, 212, 15.50, 3),
  (20, 'Twenty Love Poems and a Song of Despair',  10, 'poetry',          1924, 96,  9.00,  6),
  (21, 'Cosmos',                                   11, 'non-fiction',     1980, 396, 18.00, 7),
  (22, 'Pale Blue Dot',                            11, 'non-fiction',     1994, 429, 17.50, 2),
  (23, 'Silent Spring',                            12, 'non-fiction',     1962, 378, 15.99, 4),
  (24, 'Gaudy Night',                              13, 'mystery',         1935, 501, 10.50, 3),
  (25, 'Kafka on the Shore',                       14, 'fiction',         2002, 505, 16.00, 8),
  (26, 'The Lathe of Heaven',                      1,  'science-fiction', 1971, 184, 11.50, 5),
  (27, 'The Tombs of Atuan',                       1,  'fantasy',         1970, 180, 9.99,  6),
  (28, 'Strong Poison',                            13, 'mystery',         1930, 261, 9.99,  2);

INSERT INTO customers (id, name, city, joined) VALUES
  (1, 'Ada Park',      'Seoul',  '2023-02-11'),
  (2, 'Bruno Costa',   'Lisbon', '2023-06-30'),
  (3, 'Chloé Martin',  'Lyon',   '2023-09-04'),
  (4, 'Dev Iyer',      'Pune',   '2024-01-15'),
  (5, 'Emma Schulz',   'Berlin', '2024-03-22'),
  (6, 'Farid Haddad',  'Beirut', '2024-05-09'),
  (7, 'Grace O''Neill', 'Dublin', '2024-08-17'),
  (8, 'Hiro Tanaka',   'Osaka',  '2024-11-02');

INSERT INTO orders (id, customer_id, ordered_at, status) VALUES
  (1,  1, '2024-09-02 10:15:00', 'delivered'),
  (2,  2, '2024-09-14 18:40:00', 'delivered'),
  (3,  3, '2024-10-01 09:05:00', 'delivered'),
  (4,  1, '2024-10-20 21:30:00', 'delivered'),
  (5,  4, '2024-11-03 12:00:00', 'cancelled'),
  (6,  5, '2024-11-18 16:45:00', 'delivered'),
  (7,  6, '2024-12-05 08:20:00', 'delivered'),
  (8,  7, '2024-12-12 19:10:00', 'delivered'),
  (9,  8, '2024-12-22 11:55:00', 'delivered'),
  (10, 2, '2025-01-09 14:25:00', 'delivered'),
  (11, 3, '2025-01-27 17:00:00', 'delivered'),
  (12, 5, '2025-02-14 10:30:00', 'delivered'),
  (13, 4, '2025-02-28 20:15:00', 'delivered'),
  (14, 6, '2025-03-11 09:45:00', 'shipped'),
  (15, 7, '2025-03-19 13:35:00', 'shipped'),
  (16, 1, '2025-03-25 22:05:00', 'pending'),
  (17, 8, '2025-03-28 07:50:00', 'pending'),
  (18, 2, '2025-03-30 15:20:00', 'cancelled');

INSERT INTO order_items (order_id, book_id, quantity, unit_price) VALUES
  (1,  1,  1, 9.99),  (1,  17, 2, 10.99),
  (2,  6,  1, 8.99),  (2,  7,  1, 8.99),  (2, 24, 1, 10.50),
  (3,  4,  1, 11.00), (3,  11, 1, 13.00),
  (4,  2,  1, 12.50), (4,  3,  1, 13.99),
  (5,  21, 1, 18.00),
  (6,  13, 1, 14.99), (6,  25, 1, 16.00),
  (7,  15, 1, 11.99), (7,  16, 1, 12.99), (7,  9,  1, 14.00),
  (8,  18, 1, 16.99), (8,  17, 1, 10.99),
  (9,  25, 2, 16.00),
  (10, 10, 1, 15.00), (10, 9,  1, 14.00),
  (11, 19, 1, 15.50), (11, 20, 1, 9.00),
  (12, 21, 1, 18.00), (12, 23, 1, 15.99), (12, 22, 1, 17.50),
  (13, 6,  3, 8.99),
  (14, 1,  1, 9.99),  (14, 27, 1, 9.99),  (14, 26, 1, 11.50),
  (15, 14, 1, 13.99), (15, 13, 1, 14.99),
  (16, 28, 1, 9.99),  (16, 24, 1, 10.50),
  (17, 5,  1, 12.00), (17, 12, 1, 13.50),
  (18, 18, 2, 16.99);
