# The base's example config, with the shared state: every replica's limits
# are counted in the Redis of MCPD_REDIS_URL (docs/operations.md,
# "Scale-out"). The Secret's password overrides the URL's.
server {
  name         = "mcpd"
  instructions = "A greeting and a small notes database."

  state {
    redis    = env("MCPD_REDIS_URL")
    password = env("MCPD_REDIS_PASSWORD", "")
  }
}

database "notes" {
  driver = "sqlite"
  dsn    = "file:${env("MCPD_DATA_DIR", ".mcpd")}/notes.db"
  seed   = <<-SQL
    CREATE TABLE notes (id INTEGER PRIMARY KEY, text TEXT NOT NULL);
    INSERT INTO notes (text) VALUES ('mcpd runs on Kubernetes'), ('every replica reads the same ConfigMap');
  SQL
}

tool "greet" {
  description = "Greet someone by name."
  # 30 a minute per caller, across all replicas.
  rate_limit {
    per_caller = "30/m"
  }
  param "name" {
    type       = "string"
    min_length = 1
    max_length = 100
  }
  result {
    content "text" {
      text = "Hello, ${args.name}!"
    }
  }
}

tool "list_notes" {
  description = "The notes, newest first."
  annotations {
    read_only = true
  }
  param "limit" {
    type    = "integer"
    minimum = 1
    maximum = 100
    default = 10
  }
  sql {
    database = "notes"
    query    = "SELECT id, text FROM notes ORDER BY id DESC LIMIT :limit"
  }
}
