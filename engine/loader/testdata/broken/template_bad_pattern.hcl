resource_template "note" {
  uri_template = "notes://{name}"
  param "name" {
    pattern = "[a-z"
  }
  text = "x"
}
