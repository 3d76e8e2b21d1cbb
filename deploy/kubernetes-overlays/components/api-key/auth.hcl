# Callers authenticate with the API key mounted from the Secret
# mcpd-api-key (kustomization.yaml beside this file). One api_key block
# per caller; its name is the principal in the audit log.
auth {
  api_key "clients" {
    value = trimspace(file("/run/secrets/mcpd/api-key"))
  }
}
