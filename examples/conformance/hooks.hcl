# Fixtures for the suite's logging scenarios and its diagnostic hook tools
# (see README.md beside this file).

# tools-call-with-logging (2025-11-25): three info log records, 50 ms apart,
# sent while the call runs. Each stderr line of the program is one record.
tool "test_tool_with_logging" {
  description = "Tests tool that sends log messages during execution"
  shell {
    command    = ["/bin/sh", "-c", "echo 'Tool execution started' >&2; sleep 0.05; echo 'Tool processing data' >&2; sleep 0.05; echo 'Tool execution completed' >&2"]
    log_stderr = "info"
  }
  result {
    content "text" {
      text = "Tool with logging executed successfully"
    }
  }
}

# server-stateless (2026-07-28): a log record the server must drop when the
# request's _meta names no log level.
tool "test_logging_tool" {
  description = "Sends an info log record; dropped unless the client asked for a log level"
  log {
    level   = "info"
    message = "'test_logging_tool executed'"
  }
  result {
    content "text" {
      text = "Log attempted; mcpd sends it only when the client set a log level."
    }
  }
}

# server-stateless (2026-07-28): hooks that change the tool and prompt lists
# while the suite listens on subscriptions/listen. Each call rewrites a file
# of the directory MCPD_CONFORMANCE_STATE, which mcpd serves as a second
# config path (`-c examples/conformance -c "$MCPD_CONFORMANCE_STATE"`): mcpd
# reloads it and sends one list_changed. The file is written to a hidden
# temporary name and renamed, so the reload never sees it half written, and
# every call writes a new description, so every call is a change.
tool "test_trigger_tool_change" {
  description = "Changes the tool list (rewrites a generated config file), to trigger notifications/tools/list_changed"
  shell {
    command = ["/bin/sh", "-c", <<-EOT
      [ -n "$STATE" ] || { echo "set MCPD_CONFORMANCE_STATE to a directory that mcpd also serves with -c" >&2; exit 1; }
      tmp="$STATE/.trigger-tool.$$"
      printf 'tool "test_transient_tool" {\n  description = "Transient tool of test_trigger_tool_change (%s)"\n  result {\n    text = "\\"transient\\""\n  }\n}\n' "$(date +%s%N)" >"$tmp"
      mv "$tmp" "$STATE/trigger-tool.hcl"
      EOT
    ]
    env = {
      STATE = env("MCPD_CONFORMANCE_STATE", "")
    }
  }
  result {
    content "text" {
      text = "Tool list changed"
    }
  }
}

tool "test_trigger_prompt_change" {
  description = "Changes the prompt list (rewrites a generated config file), to trigger notifications/prompts/list_changed"
  shell {
    command = ["/bin/sh", "-c", <<-EOT
      [ -n "$STATE" ] || { echo "set MCPD_CONFORMANCE_STATE to a directory that mcpd also serves with -c" >&2; exit 1; }
      tmp="$STATE/.trigger-prompt.$$"
      printf 'prompt "test_transient_prompt" {\n  description = "Transient prompt of test_trigger_prompt_change (%s)"\n  message {\n    role = "user"\n    text = "transient"\n  }\n}\n' "$(date +%s%N)" >"$tmp"
      mv "$tmp" "$STATE/trigger-prompt.hcl"
      EOT
    ]
    env = {
      STATE = env("MCPD_CONFORMANCE_STATE", "")
    }
  }
  result {
    content "text" {
      text = "Prompt list changed"
    }
  }
}
