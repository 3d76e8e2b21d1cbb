database "shop" {
  driver = "sqlite"
  dsn    = "file:${env("MCPD_LSP_TEST_DIR", "/tmp")}/mcpd-lsp-test.db"
}

http_backend "api" {
  base_url = "http://127.0.0.1:9"
}
