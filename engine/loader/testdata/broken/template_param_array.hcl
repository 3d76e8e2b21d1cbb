resource_template "note" {
  uri_template = "notes://{name}"
  param "name" {
    type = "array"
  }
  text = "x"
}
