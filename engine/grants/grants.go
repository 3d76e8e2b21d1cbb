// Package grants keeps the authorizations users give mcpd to call an
// upstream on their behalf (the per-user connect flow, engine/connect):
// one grant per principal and upstream, holding the access token, the
// refresh token and when the access token expires. It also keeps the
// short-lived records the flow needs between sending a user to the
// authorization server and the callback (pending authorizations) and the
// client registrations it made (RFC 7591).
//
// Every value is sealed with AES-256-GCM before it is stored, with the
// key it is stored under as additional data, so that a value copied under
// another principal's key does not open. Values live in Redis when the
// config has a state block (every replica sees the same grants) and in
// the process's memory otherwise (they end with it).
package grants

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"
)

// KeySize is the size of a sealing key: AES-256.
const KeySize = 32

// maxValue bounds what a backend answers for one key: a grant is a few
// KiB; anything far larger was not written by mcpd.
const maxValue = 256 << 10

// ErrNotFound is returned by Backend.Get and Take when the key holds
// nothing (or held something that expired).
var ErrNotFound = errors.New("not found")

// Backend stores sealed values by key, each with a lifetime. Memory and
// Redis implement it.
type Backend interface {
	Get(ctx context.Context, key string) ([]byte, error)
	Set(ctx context.Context, key string, val []byte, ttl time.Duration) error
	// Take returns the value and deletes it, at once: a pending
	// authorization is completed once.
	Take(ctx context.Context, key string) ([]byte, error)
	// Delete removes key and reports whether it held a value.
	Delete(ctx context.Context, key string) (bool, error)
	// Keys lists the keys that begin with prefix, at most max of them.
	Keys(ctx context.Context, prefix string, max int) ([]string, error)
	// Shared reports whether other processes see the same values.
	Shared() bool
}

// Sealer seals and opens values with one key.
type Sealer struct{ aead cipher.AEAD }

// NewSealer returns a sealer for key, which must be KeySize bytes.
func NewSealer(key []byte) (*Sealer, error) {
	if len(key) != KeySize {
		return nil, fmt.Errorf("a grant key is %d bytes (e.g. 64 hex digits or 44 base64 characters); got %d", KeySize, len(key))
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, err
	}
	return &Sealer{aead: aead}, nil
}

// RandomSealer is a sealer with a fresh random key, for values that live
// in this process only.
func RandomSealer() *Sealer {
	key := make([]byte, KeySize)
	if _, err := rand.Read(key); err != nil {
		panic(err) // crypto/rand does not fail on supported platforms
	}
	s, _ := NewSealer(key)
	return s
}

// Seal encrypts plain, bound to where (the key it is stored under).
func (s *Sealer) Seal(plain []byte, where string) []byte {
	nonce := make([]byte, s.aead.NonceSize(), s.aead.NonceSize()+len(plain)+s.aead.Overhead())
	if _, err := rand.Read(nonce); err != nil {
		panic(err)
	}
	return s.aead.Seal(nonce, nonce, plain, []byte(where))
}

// Open decrypts what Seal sealed for where. It fails for another key,
// another where, or a value that was altered.
func (s *Sealer) Open(sealed []byte, where string) ([]byte, error) {
	n := s.aead.NonceSize()
	if len(sealed) < n+s.aead.Overhead() {
		return nil, errors.New("the stored value is too short to be sealed")
	}
	plain, err := s.aead.Open(nil, sealed[:n], sealed[n:], []byte(where))
	if err != nil {
		return nil, errors.New("the stored value does not open with this key (another grant key, or altered)")
	}
	return plain, nil
}

// Vault is a backend with a sealer: values go in sealed as JSON and come
// out opened.
type Vault struct {
	Backend Backend
	Sealer  *Sealer
}

// Put seals v as JSON under key for ttl.
func (v Vault) Put(ctx context.Context, key string, val any, ttl time.Duration) error {
	plain, err := json.Marshal(val)
	if err != nil {
		return err
	}
	return v.Backend.Set(ctx, key, v.Sealer.Seal(plain, key), ttl)
}

// Get opens key's value into out; ErrNotFound when there is none.
func (v Vault) Get(ctx context.Context, key string, out any) error {
	sealed, err := v.Backend.Get(ctx, key)
	if err != nil {
		return err
	}
	return v.open(sealed, key, out)
}

// Take is Get that deletes the value.
func (v Vault) Take(ctx context.Context, key string, out any) error {
	sealed, err := v.Backend.Take(ctx, key)
	if err != nil {
		return err
	}
	return v.open(sealed, key, out)
}

func (v Vault) open(sealed []byte, key string, out any) error {
	if len(sealed) > maxValue {
		return fmt.Errorf("the stored value is %d bytes, over %d", len(sealed), maxValue)
	}
	plain, err := v.Sealer.Open(sealed, key)
	if err != nil {
		return err
	}
	return json.Unmarshal(plain, out)
}

// Grant is one user's authorization of mcpd to call one upstream. Its
// tokens are secrets: every printed form of a Grant (fmt, slog) shows
// what Info shows, never a token; only JSON (sealed before it is stored)
// carries them.
type Grant struct {
	AccessToken  string    `json:"at"`
	RefreshToken string    `json:"rt,omitempty"`
	Expiry       time.Time `json:"exp"`
	Scope        string    `json:"scope,omitempty"`
	// Principal is whose grant it is (connect.PrincipalKey), and Upstream
	// the mcp_server block it is for: repeated inside the sealed value so
	// that a value is only ever used for its own key.
	Principal string    `json:"p"`
	Upstream  string    `json:"u"`
	Issuer    string    `json:"iss"`
	ClientID  string    `json:"cid"`
	Created   time.Time `json:"created"`
	Refreshed time.Time `json:"refreshed,omitempty"`
}

// Info is what may be shown of a grant: no token.
type Info struct {
	Upstream, Principal, Issuer, Scope string
	Expiry, Created, Refreshed         time.Time
	Refreshable                        bool
}

// Info returns what may be shown of g.
func (g *Grant) Info() Info {
	return Info{Upstream: g.Upstream, Principal: g.Principal, Issuer: g.Issuer, Scope: g.Scope,
		Expiry: g.Expiry, Created: g.Created, Refreshed: g.Refreshed, Refreshable: g.RefreshToken != ""}
}

func (g *Grant) String() string {
	return fmt.Sprintf("grant of %s for upstream %s (expires %s)", g.Principal, g.Upstream, g.Expiry.Format(time.RFC3339))
}

// GoString is String, for %#v.
func (g *Grant) GoString() string { return g.String() }

// LogValue is String, for slog.
func (g *Grant) LogValue() slog.Value { return slog.StringValue(g.String()) }
