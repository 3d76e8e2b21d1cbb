package telemetry

import (
	"context"
	"encoding/json"
	"net/http"
	"time"

	"github.com/mcpd/mcpd/engine/sharedstate"
)

// Health answers /healthz and /readyz.
type Health struct {
	// Ready reports whether the server takes new work (false once a
	// shutdown began).
	Ready func() bool
	// Config reports the running config and the latest reload.
	Config func() ConfigReport
	// CheckBackends, when not nil, checks the backends for /readyz and
	// returns a message for each that failed, keyed by "type name".
	CheckBackends func(ctx context.Context) map[string]string
	// CheckTimeout bounds CheckBackends (default 2s).
	CheckTimeout time.Duration
	// State, when not nil, reports the shared state of the running config
	// (nil: no state block). It is shown, never a reason to answer 503:
	// every replica shares the one Redis, so an unready Redis would take
	// every replica out of the load balancer at once, tools without shared
	// limits included; fail-open tools keep working on local limits and
	// fail-closed ones answer a clear tool error instead.
	State func() *sharedstate.Status
}

// ConfigReport is the config part of a health answer.
type ConfigReport struct {
	Generation int       `json:"generation"`
	LoadedAt   time.Time `json:"loaded_at"`
	LastReload struct {
		Time   *time.Time `json:"time,omitempty"`
		Result string     `json:"result"` // none, success, failure
		// Diagnostics are the errors of the latest reload when it failed.
		Diagnostics string `json:"diagnostics,omitempty"`
	} `json:"last_reload"`
}

type healthBody struct {
	Status   string            `json:"status"` // ok, draining, unavailable
	Config   ConfigReport      `json:"config"`
	Backends map[string]string `json:"backends,omitempty"`
	// State is the shared state's status, when the config has one.
	State *sharedstate.Status `json:"state,omitempty"`
}

// Healthz answers 200 while the process serves HTTP at all: a liveness
// check. A failed reload does not make it fail (the last good config is
// serving), but its body shows the diagnostics.
func (h *Health) Healthz(w http.ResponseWriter, r *http.Request) {
	status := "ok"
	if !h.Ready() {
		status = "draining"
	}
	writeHealth(w, http.StatusOK, healthBody{Status: status, Config: h.Config()})
}

// Readyz answers 200 when the server takes new work, 503 from the moment a
// shutdown begins (so that a load balancer stops sending at once) and, with
// backend checks on, while a backend does not answer.
func (h *Health) Readyz(w http.ResponseWriter, r *http.Request) {
	body := healthBody{Status: "ok", Config: h.Config()}
	if h.State != nil {
		body.State = h.State()
	}
	code := http.StatusOK
	if !h.Ready() {
		body.Status, code = "draining", http.StatusServiceUnavailable
	} else if h.CheckBackends != nil {
		timeout := h.CheckTimeout
		if timeout <= 0 {
			timeout = 2 * time.Second
		}
		ctx, cancel := context.WithTimeout(r.Context(), timeout)
		defer cancel()
		if failed := h.CheckBackends(ctx); len(failed) > 0 {
			body.Status, body.Backends, code = "unavailable", failed, http.StatusServiceUnavailable
		}
	}
	writeHealth(w, code, body)
}

func writeHealth(w http.ResponseWriter, code int, body healthBody) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(body)
}
