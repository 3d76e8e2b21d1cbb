// Package requeststate keeps the state of a request that asked its client for input
// (confirmation, elicitation, sampling, roots) between the rounds of the
// 2026-07-28 protocol's multi-round-trip flow. The server keeps nothing: the
// state travels to the client and back as requestState, signed so that a
// client cannot forge, alter, extend or move it to another call.
package requeststate

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
)

// DefaultTTL is how long a requestState stays valid: long enough for a
// person to read a question and answer it.
const DefaultTTL = 10 * time.Minute

// State is what a retry needs: the round being asked, the answers of
// earlier rounds, and what it is bound to.
type State struct {
	// Round is the round whose questions the client is answering (1-based).
	Round int `json:"r"`
	// Answers are the inputs gathered so far, by ask name.
	Answers map[string]any `json:"a,omitempty"`
	// Handler is the state of the tool's adapter when the client answers
	// the adapter's questions (adapter.InputRequired.State): those
	// rounds come after every round of the ask blocks.
	Handler string `json:"h,omitempty"`
	// Bind is Bind(kind, name, args) of the call the state belongs to.
	Bind string `json:"b"`
	// Expires is the Unix time after which the state is refused.
	Expires int64 `json:"e"`
	// Nonce makes every sealed state unique, so that two calls asked the
	// same question in the same second each get a state of their own to
	// claim (see Used).
	Nonce string `json:"n,omitempty"`
}

// Sealer signs and verifies states with HMAC-SHA256. It is immutable.
type Sealer struct {
	key []byte
	ttl time.Duration
	now func() time.Time
}

// NewSealer returns a Sealer for key. Every replica that may receive a
// retry must use the same key.
func NewSealer(key []byte, ttl time.Duration) *Sealer {
	if ttl <= 0 {
		ttl = DefaultTTL
	}
	// Derive the MAC key so that a short passphrase and its use elsewhere
	// do not share bytes with what is on the wire.
	mac := hmac.New(sha256.New, []byte("mcpd requestState v1"))
	mac.Write(key)
	return &Sealer{key: mac.Sum(nil), ttl: ttl, now: time.Now}
}

// RandomSealer returns a Sealer with a random key: states it seals are
// valid in this process only (one replica).
func RandomSealer() (*Sealer, error) {
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		return nil, fmt.Errorf("generating a requestState key: %w", err)
	}
	return NewSealer(key, DefaultTTL), nil
}

// WithClock returns a copy of s that reads the time from now (for tests).
func (s *Sealer) WithClock(now func() time.Time) *Sealer {
	cp := *s
	cp.now = now
	return &cp
}

// BindCaller identifies one call of caller (the verified principal, as
// "method:name"; "" for the local user) with the values bound from it
// (caller-bound params): a state minted for one caller, carrying its
// confirmation and answers, is refused for another, and for the same
// caller once what is bound from it has changed.
func BindCaller(kind, name string, args map[string]any, caller string, bound map[string]any) string {
	// encoding/json sorts map keys: equal arguments give equal bytes.
	b, _ := json.Marshal(args)
	h := sha256.New()
	h.Write([]byte(kind))
	h.Write([]byte{0})
	h.Write([]byte(name))
	h.Write([]byte{0})
	h.Write(b)
	h.Write([]byte{0})
	h.Write([]byte(caller))
	h.Write([]byte{0})
	if len(bound) > 0 {
		c, _ := json.Marshal(bound)
		h.Write(c)
	}
	return base64.RawURLEncoding.EncodeToString(h.Sum(nil)[:18])
}

// Seal encodes st, setting its expiry, as "payload.signature".
func (s *Sealer) Seal(st State) (string, error) {
	st.Expires = s.now().Add(s.ttl).Unix()
	var nonce [12]byte
	if _, err := rand.Read(nonce[:]); err != nil {
		return "", fmt.Errorf("sealing requestState: %w", err)
	}
	st.Nonce = base64.RawURLEncoding.EncodeToString(nonce[:])
	payload, err := json.Marshal(st)
	if err != nil {
		return "", fmt.Errorf("encoding requestState: %w", err)
	}
	p := base64.RawURLEncoding.EncodeToString(payload)
	return p + "." + s.sign(p), nil
}

func (s *Sealer) sign(p string) string {
	mac := hmac.New(sha256.New, s.key)
	mac.Write([]byte(p))
	return base64.RawURLEncoding.EncodeToString(mac.Sum(nil))
}

// Errors Open returns; every one means the retry is refused.
var (
	ErrTampered = errors.New("requestState was not issued by this server or was altered")
	ErrExpired  = errors.New("requestState has expired; call the tool again")
	ErrForeign  = errors.New("requestState belongs to another call (other tool, prompt, arguments or caller)")
)

// Open verifies token and returns its state if it is intact, unexpired and
// bound to bind.
func (s *Sealer) Open(token, bind string) (State, error) {
	p, sig, ok := strings.Cut(token, ".")
	if !ok || !hmac.Equal([]byte(sig), []byte(s.sign(p))) {
		return State{}, ErrTampered
	}
	payload, err := base64.RawURLEncoding.DecodeString(p)
	if err != nil {
		return State{}, ErrTampered
	}
	var st State
	if err := json.Unmarshal(payload, &st); err != nil || st.Round < 1 {
		return State{}, ErrTampered
	}
	if s.now().Unix() > st.Expires {
		return State{}, ErrExpired
	}
	if st.Bind != bind {
		return State{}, ErrForeign
	}
	return st, nil
}

// MustRandomSealer is RandomSealer for callers that cannot go on without
// one (crypto/rand does not fail on supported systems).
func MustRandomSealer() *Sealer {
	s, err := RandomSealer()
	if err != nil {
		panic(err)
	}
	return s
}
