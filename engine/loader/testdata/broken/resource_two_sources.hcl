resource "readme" {
  uri  = "docs://readme"
  text = "Read me."
  blob = "UmVhZCBtZS4="
}
