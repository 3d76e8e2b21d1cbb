prompt "ask" {
  message {
    role = "user"
  }
}
