package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// envProjectConfig reads two variables without a default (its mcpd stops
// at start without them) and one with a default (not needed).
const envProjectConfig = `
server {
  request_state_key = env("SHOP_STATE_KEY")
}

tool "region" {
  description = "Says the region."
  result {
    content "text" {
      text = env("SHOP_REGION", "eu")
    }
  }
}

tool "token_length" {
  description = "Says how long the token is."
  result {
    content "text" {
      text = "${strlen(env("SHOP_TOKEN"))}"
    }
  }
}
`

// The snippet client-config prints for each JSON host starts mcpd: a real
// stdio client runs the command, args and env of the generated entry, with
// the host's placeholders filled in as the host would, and lists the
// tools. Without the variables in the entry, mcpd stops at start.
func TestClientConfigStartsTheServer(t *testing.T) {
	root := t.TempDir()
	project := filepath.Join(root, "Book Shop")
	other := filepath.Join(root, "crm")
	for _, dir := range []string{project, other} {
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "tools.hcl"), []byte(envProjectConfig), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	values := map[string]string{"SHOP_STATE_KEY": "a-key-of-at-least-16-bytes", "SHOP_TOKEN": "secret-token"}
	// The test's own environment must not hand mcpd the variables.
	for n := range values {
		t.Setenv(n, "")
		os.Unsetenv(n)
	}

	placeholders := map[string]string{
		"claude-desktop": "${%s}",       // the user replaces it
		"cursor":         "${env:%s}",   // Cursor interpolates it
		"vscode":         "${input:%s}", // VS Code prompts for it
	}
	for host, format := range placeholders {
		t.Run(host, func(t *testing.T) {
			out, err := mcpdCommand("client-config", "--host", host, "-c", project).Output()
			if err != nil {
				t.Fatalf("client-config: %v", err)
			}
			var doc struct {
				Servers    map[string]hostEntry `json:"servers"`
				MCPServers map[string]hostEntry `json:"mcpServers"`
				Inputs     []struct {
					Type, ID string
					Password bool
				} `json:"inputs"`
			}
			if err := json.Unmarshal(out, &doc); err != nil {
				t.Fatalf("%v\n%s", err, out)
			}
			servers := doc.MCPServers
			if host == "vscode" {
				servers = doc.Servers
				var ids []string
				for _, in := range doc.Inputs {
					if in.Type != "promptString" || !in.Password {
						t.Errorf("input %+v: want a password promptString", in)
					}
					ids = append(ids, in.ID)
				}
				if !reflect.DeepEqual(ids, []string{"SHOP_STATE_KEY", "SHOP_TOKEN"}) {
					t.Errorf("inputs %v", ids)
				}
			}
			entry, ok := servers["book-shop"]
			if !ok || len(servers) != 1 {
				t.Fatalf("servers %v: want one named book-shop (from the config directory)\n%s", servers, out)
			}
			if strings.Contains(string(out), "secret-token") {
				t.Fatal("the snippet holds a value")
			}
			var names []string
			env := os.Environ()
			env = slices.DeleteFunc(env, func(kv string) bool { return strings.HasPrefix(kv, "MCPD_") })
			for n, placeholder := range entry.Env {
				names = append(names, n)
				if placeholder != strings.Replace(format, "%s", n, 1) {
					t.Errorf("env %s = %q, want the placeholder %q", n, placeholder, format)
				}
				env = append(env, n+"="+values[n]) // what the host puts there
			}
			slices.Sort(names)
			if !reflect.DeepEqual(names, []string{"SHOP_STATE_KEY", "SHOP_TOKEN"}) {
				t.Errorf("env %v: want the variables read without a default", names)
			}

			if host == "claude-desktop" {
				// Started as printed, placeholders and all (the user did not
				// replace them): mcpd stops at once and says why.
				unfilled := slices.Clone(env[:len(env)-len(entry.Env)])
				for n, placeholder := range entry.Env {
					unfilled = append(unfilled, n+"="+placeholder)
				}
				cmd := mcpdCommand()
				cmd.Path, cmd.Args, cmd.Env = entry.Command, append([]string{entry.Command}, entry.Args...), unfilled
				out, err := cmd.CombinedOutput()
				if err == nil || !strings.Contains(string(out), `is "${SHOP_TOKEN}", a placeholder its host did not fill in`) {
					t.Errorf("started with the placeholders: %v\n%s", err, out)
				}
			}

			cmd := mcpdCommand()
			cmd.Path, cmd.Args, cmd.Env = entry.Command, append([]string{entry.Command}, entry.Args...), env
			client := mcp.NewClient(&mcp.Implementation{Name: host, Version: "1"}, nil)
			cs, err := client.Connect(bounded(t), &mcp.CommandTransport{Command: cmd, TerminateDuration: 20 * time.Second}, nil)
			if err != nil {
				t.Fatalf("starting the snippet's command: %v", err)
			}
			defer cs.Close()
			tools, err := cs.ListTools(bounded(t), nil)
			if err != nil || len(tools.Tools) != 2 {
				t.Fatalf("tools/list: %v %v", tools, err)
			}
			res, err := cs.CallTool(bounded(t), &mcp.CallToolParams{Name: "token_length"})
			if err != nil || res.IsError || textOf(res) != "12" {
				t.Errorf("token_length: %v %v", res, err)
			}
		})
	}

	// The text hosts pass the same variables their own way.
	out, err := mcpdCommand("client-config", "--host", "codex", "-c", project).Output()
	if err != nil || !strings.Contains(string(out), "[mcp_servers.book-shop]\n") || !strings.Contains(string(out), `env_vars = ["SHOP_STATE_KEY", "SHOP_TOKEN"]`) {
		t.Errorf("codex: %v\n%s", err, out)
	}
	out, err = mcpdCommand("client-config", "--host", "claude-code", "-c", project).Output()
	if err != nil || !strings.HasPrefix(string(out), `claude mcp add --transport stdio book-shop --env "SHOP_STATE_KEY=$SHOP_STATE_KEY" --env "SHOP_TOKEN=$SHOP_TOKEN" -- `) {
		t.Errorf("claude-code: %v\n%s", err, out)
	}

	// Two projects are two servers in one host; --name still wins, and a
	// toolset is a server of its own.
	names := map[string][]string{
		"crm":         {"-c", other},
		"crm-support": {"-c", filepath.Join(other, "tools.hcl"), "--toolset", "support"},
		"mine":        {"-c", other, "--name", "mine"},
		"book-shop":   {"-c", filepath.Join(project, "tools.hcl")},
	}
	for want, args := range names {
		out, err := mcpdCommand(append([]string{"client-config", "--host", "cursor"}, args...)...).Output()
		var doc struct{ MCPServers map[string]any }
		if err != nil || json.Unmarshal(out, &doc) != nil || doc.MCPServers[want] == nil {
			t.Errorf("%v: %v\n%s\nwant the name %s", args, err, out, want)
		}
	}
}

type hostEntry struct {
	Command string            `json:"command"`
	Args    []string          `json:"args"`
	Env     map[string]string `json:"env"`
}

func TestSanitizeName(t *testing.T) {
	for in, want := range map[string]string{
		"Book Shop": "book-shop", "crm": "crm", "my_tools.v2": "my_tools-v2", "--x--": "x", "日本": "", "a  b": "a-b",
	} {
		if got := sanitizeName(in); got != want {
			t.Errorf("sanitizeName(%q) = %q, want %q", in, got, want)
		}
	}
}
