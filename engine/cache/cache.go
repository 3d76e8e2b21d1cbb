// Package cache holds the results of read-only tools between calls: the
// stage of a call that answers from the cache (Tool, result.go), the
// stores (an in-memory LRU bounded in bytes, or Redis shared by replicas)
// and the derivation of a call's key. The stores know nothing of MCP: a
// value is opaque bytes, or for the memory store any value with its size;
// Tool stores and reads tool results, and engine/snapshot decides which
// tools are cacheable and compiles their cache blocks.
package cache

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"time"
)

// ErrMiss is a lookup that found nothing (or an expired entry).
var ErrMiss = errors.New("cache miss")

// Entry is one cached value and when it was computed.
type Entry struct {
	// Value is the encoded value: what a shared store (Redis) keeps, and
	// what bounds an entry's size in every store.
	Value []byte
	// Decoded is the value Value encodes, which the memory store keeps
	// instead of Value, so that a hit decodes nothing; it must not be
	// modified once stored. A shared store ignores it and returns nil.
	Decoded any
	// At is when the value was computed, for the age a hit reports.
	At time.Time
}

// A Store holds entries for a time. Get and Set must be safe for
// concurrent use and honour ctx. An error other than ErrMiss is a store
// that failed (Redis down): the caller calls the tool instead, since a
// cache is never fail-closed.
type Store interface {
	Get(ctx context.Context, key string) (Entry, error)
	Set(ctx context.Context, key string, e Entry, ttl time.Duration) error
	// Kind names the store in logs and docs: "memory" or "redis".
	Kind() string
}

// KeyParts is what a call's key is derived from. Two calls share an
// entry only when every part is equal.
type KeyParts struct {
	// Fingerprint is the tool's compiled definition: a reload that changes
	// the tool changes it, so that the old entries are never read again.
	Fingerprint string
	Tool        string
	// Args are the arguments after validation and defaults, with the
	// caller-bound values; Inputs the answers of the tool's ask blocks.
	Args   map[string]any
	Inputs map[string]any
	// Principal is the caller ("method:name", "" for the local user), or
	// "" with Shared.
	Principal string
	Shared    bool
}

// Key derives the key of a call: a SHA-256 of its parts, hex-encoded. The
// arguments are canonical JSON (encoding/json sorts object keys), so that
// the order the client sent them in does not matter. The key is a hash so
// that no argument, which may be a secret, is ever stored in clear (Redis
// keys are listed by SCAN, MONITOR, slow logs).
func Key(p KeyParts) (string, error) {
	h := sha256.New()
	write := func(s string) {
		// Length-prefixed: no two sequences of parts give the same bytes.
		var n [8]byte
		l := uint64(len(s))
		for i := range n {
			n[i] = byte(l >> (8 * i))
		}
		h.Write(n[:])
		h.Write([]byte(s))
	}
	write("mcpd-cache-v1")
	write(p.Fingerprint)
	write(p.Tool)
	args, err := json.Marshal(p.Args)
	if err != nil {
		return "", err
	}
	write(string(args))
	if p.Inputs != nil {
		in, err := json.Marshal(p.Inputs)
		if err != nil {
			return "", err
		}
		write(string(in))
	} else {
		write("")
	}
	if p.Shared {
		write("shared")
	} else {
		write("caller:" + p.Principal)
	}
	var sum [sha256.Size]byte
	return hex.EncodeToString(h.Sum(sum[:0])), nil
}
