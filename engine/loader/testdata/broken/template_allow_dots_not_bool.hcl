resource_template "note" {
  uri_template = "notes://{+path}"
  param "path" {
    allow_dot_segments = "yes"
  }
  text = "x"
}
