package console

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	sdkauth "github.com/modelcontextprotocol/go-sdk/auth"

	"github.com/mcpd/mcpd/authoring/lint"
	"github.com/mcpd/mcpd/engine/lock"
	"github.com/mcpd/mcpd/engine/principal"
	"github.com/mcpd/mcpd/engine/snapshot"
)

// Drift: the upstream definitions that differ from the lock file
// (engine/lock, engine/snapshot's pins.go), shown to admins with their
// diff and the lint findings on their text, and approved from the page.
//
// Who is an admin: the local user (no auth block: whoever can reach the
// listener can already call every tool) and a principal holding the scope
// AdminScope. Nobody else is sent the "drift" event (it shows upstream
// text that the lock keeps from the model, and the tools' names whatever
// their scopes) or may approve.

// AdminScope is the scope that makes a principal an admin of the console.
const AdminScope = "mcpd:admin"

func isAdmin(who *principal.Principal) bool {
	return who == nil || who.HasScopes([]string{AdminScope})
}

// DriftView is one drift as the page shows it.
type DriftView struct {
	Source string `json:"source"`
	Kind   string `json:"kind"`
	Name   string `json:"name"`
	Served string `json:"served"`
	Status string `json:"status"` // changed, new
	Policy string `json:"policy"` // quarantine (hidden), allow (served), refuse (the upstream hidden)
	// Diff is the change as `mcpd lock --check` prints it; Fields the
	// same, value by value.
	Diff   string             `json:"diff"`
	Fields []lock.FieldChange `json:"fields"`
	// Findings are lint's findings on the text of the definition as it is
	// now.
	Findings []lint.Finding `json:"findings"`
}

// Drifts is the "drift" event: the drifts of the config served, and the
// lock file they are approved into.
type Drifts struct {
	Lock   string      `json:"lock"`
	Drifts []DriftView `json:"drifts"`
}

// DriftsOf converts a snapshot's drifts.
func DriftsOf(s *snapshot.Snapshot) Drifts {
	out := Drifts{Lock: s.LockPath(), Drifts: []DriftView{}}
	for _, d := range s.Drifts() {
		v := DriftView{Source: d.Key.Source, Kind: d.Key.Kind, Name: d.Key.Name, Served: d.Served, Status: d.Status,
			Policy: d.Policy, Diff: d.String(), Fields: d.Fields, Findings: []lint.Finding{}}
		if v.Fields == nil {
			v.Fields = []lock.FieldChange{}
		}
		if d.Now != nil {
			if f := lint.Definition(d.Now.Definition); f != nil {
				v.Findings = f
			}
		}
		out.Drifts = append(out.Drifts, v)
	}
	return out
}

// SetDrifts records the drifts of the config served and sends them to
// every admin's page.
func (c *Console) SetDrifts(d Drifts) {
	data, err := json.Marshal(d)
	if err != nil {
		c.opts.Logger.Error("console: encoding the drifts", "err", err)
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.drifts = data
	for s := range c.subs {
		if isAdmin(s.who) {
			c.send(s, message{name: "drift", data: data})
		}
	}
}

// approveRequest is the body of POST {prefix}lock/approve.
type approveRequest struct {
	Definitions []lock.Key `json:"definitions"`
}

// serveApprove approves drifts into the lock file: each named definition
// takes its current digest and body (lock.Approve), the file is written
// atomically, and the server reloads it. Admins only; the caller wraps it
// in the same Host/Origin guard and authentication as /mcp, and a JSON
// body is required, which a cross-site form cannot send.
func (c *Console) serveApprove(w http.ResponseWriter, r *http.Request) {
	who := principal.FromTokenInfo(sdkauth.TokenInfoFromContext(r.Context()))
	if !isAdmin(who) {
		http.Error(w, "approving a definition needs the scope "+AdminScope, http.StatusForbidden)
		return
	}
	if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		http.Error(w, "the body must be application/json", http.StatusUnsupportedMediaType)
		return
	}
	var req approveRequest
	if err := json.NewDecoder(io.LimitReader(r.Body, 1<<20)).Decode(&req); err != nil || len(req.Definitions) == 0 {
		http.Error(w, `the body is {"definitions": [{"Source": ..., "Kind": ..., "Name": ...}]}`, http.StatusBadRequest)
		return
	}
	if c.opts.Current == nil {
		http.Error(w, "this console cannot approve", http.StatusNotFound)
		return
	}
	n, err := approve(c.opts.Current(), req.Definitions)
	if err != nil {
		http.Error(w, err.Error(), http.StatusConflict)
		return
	}
	name := "local"
	if who != nil {
		name = who.Name
	}
	c.opts.Logger.Warn("definitions approved into the lock file from the console", "principal", name, "definitions", n, "lock", c.opts.Current().LockPath())
	if c.opts.Reload != nil {
		c.opts.Reload()
	}
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprintf(w, `{"approved":%d}`+"\n", n)
}

// approve writes the current definitions of keys, which must be drifts of
// s, into s's lock file.
func approve(s *snapshot.Snapshot, keys []lock.Key) (int, error) {
	path := s.LockPath()
	if path == "" {
		return 0, errors.New("nothing is pinned: there is no lock file to approve into")
	}
	byKey := map[lock.Key]lock.Change{}
	for _, d := range s.Drifts() {
		byKey[d.Key] = d.Change
	}
	var chosen []lock.Change
	for _, k := range keys {
		ch, ok := byKey[k]
		if !ok {
			return 0, fmt.Errorf("%s does not differ from the lock (any more): reload the page", k)
		}
		chosen = append(chosen, ch)
	}
	locked, err := lock.Read(path)
	if err != nil {
		return 0, err
	}
	if err := lock.Write(path, lock.Approve(locked, chosen)); err != nil {
		return 0, err
	}
	return len(chosen), nil
}
