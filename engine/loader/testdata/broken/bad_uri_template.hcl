resource_template "user" {
  uri_template = "users://{id"
  text         = "user"
}
