resource_template "note" {
  uri_template = "notes://{name}"
  param "nmae" {
    pattern = "^[a-z]+$"
  }
  text = "x"
}
