toolset "support" {
  tools = ["close_ticket"]
}
