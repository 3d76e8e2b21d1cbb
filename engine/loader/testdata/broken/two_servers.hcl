server {
  name = "one"
}

server {
  name = "two"
}
