resource "readme" {
  uri  = "readme.txt"
  text = "Read me."
}
