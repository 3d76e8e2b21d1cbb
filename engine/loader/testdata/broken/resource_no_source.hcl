resource "readme" {
  uri       = "docs://readme"
  mime_type = "text/plain"
}
