# One server, three audiences: toolsets.
#
# A help desk's tools, served whole on /mcp to its operators, and as two
# toolsets to two other audiences:
#   /mcp/support   the support agents' assistant: read-only lookups and the
#                  reply prompt, nothing that changes a ticket
#   /mcp/triage    the triage bot: the lookups and the one tool that sets a
#                  ticket's priority
# Over stdio, `mcpd serve --stdio -c examples/toolsets --toolset support`
# serves the support toolset alone. See README.md.
#
# The tools run printf (no shell, no network), so this example works
# anywhere; a real desk would use the http or sql adapter the same way.

server {
  name         = "helpdesk"
  description  = "Look up, search and triage help desk tickets."
  instructions = "Help desk tools: look tickets up, search them, and (for some callers) change them."
  # Shown by hosts beside the server, and in each endpoint's Server Card
  # (/mcp/server-card, /mcp/support/server-card, ...). A 16x16 PNG inline;
  # a larger one would be `"data:image/png;base64,${filebase64("icon.png")}"`
  # or an https URL.
  icon {
    src   = "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAABAAAAAQCAYAAAAf8/9hAAAAI0lEQVR42mP4//8/AyWYYXAZoJF34j8xeNSAUQNoa8DQzEwApTW+n17hH54AAAAASUVORK5CYII="
    sizes = ["16x16"]
  }
}

tool "search_tickets" {
  description = "Tickets whose subject contains the text."
  annotations {
    read_only = true
  }
  param "text" {
    description = "Text the ticket's subject contains"
    type        = "string"
    min_length  = 2
    max_length  = 100
  }
  shell {
    command = ["printf", "%s\\n", "tickets matching ${args.text}: #101 #204"]
  }
}

tool "search_customers" {
  description = "Customers whose name contains the text."
  annotations {
    read_only = true
  }
  param "text" {
    description = "Text the customer's name contains"
    type        = "string"
    min_length  = 2
    max_length  = 100
  }
  shell {
    command = ["printf", "%s\\n", "customers matching ${args.text}: ACME Ltd"]
  }
}

tool "get_ticket" {
  description = "One ticket by its number: subject, status and priority."
  annotations {
    read_only = true
  }
  param "id" {
    description = "The ticket's number"
    type        = "integer"
    minimum     = 1
  }
  shell {
    command = ["printf", "%s\\n", "ticket #${args.id}: printer on fire (open, priority normal)"]
  }
}

tool "set_priority" {
  description = "Set a ticket's priority."
  annotations {
    idempotent = true
  }
  param "id" {
    description = "The ticket's number"
    type        = "integer"
    minimum     = 1
  }
  param "priority" {
    description = "The new priority"
    type        = "string"
    enum        = ["low", "normal", "high", "urgent"]
  }
  shell {
    command = ["printf", "%s\\n", "ticket #${args.id}: priority set to ${args.priority}"]
  }
}

tool "close_ticket" {
  description = "Close a ticket for good."
  annotations {
    destructive = true
  }
  param "id" {
    description = "The ticket's number"
    type        = "integer"
    minimum     = 1
  }
  shell {
    command = ["printf", "%s\\n", "ticket #${args.id}: closed"]
  }
}

resource "faq" {
  uri       = "helpdesk://faq"
  mime_type = "text/markdown"
  text      = "# FAQ\n\nTurn it off and on again.\n"
}

resource "runbook" {
  uri       = "helpdesk://runbook"
  mime_type = "text/markdown"
  text      = "# Runbook (operators only)\n\nEscalate to the on-call engineer.\n"
}

prompt "reply" {
  description = "Draft a polite reply to a ticket."
  argument "id" {
    required = true
  }
  message {
    text = "Draft a short, polite reply to ticket #${args.id}. Look the ticket up first."
  }
}

toolset "support" {
  description = "Read-only lookups and the reply prompt, for the support agents' assistant."
  # Every read-only lookup: search_tickets, search_customers, and get_ticket.
  tools     = ["search_*", "get_ticket"]
  resources = ["faq"]
  prompts   = ["reply"]
  # With an auth block, a caller needs this scope to use /mcp/support at
  # all (403 otherwise); each tool's own scopes still apply.
  scopes = ["support"]
}

toolset "triage" {
  description = "Lookups and priorities, for the triage bot: everything but what closes a ticket."
  tools       = ["*", "!close_*"]
  resources   = ["helpdesk://faq"]
}
