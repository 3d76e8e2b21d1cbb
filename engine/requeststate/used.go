package requeststate

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/time/rate"
)

// What a requestState authorises. A state carries the user's answers (a
// confirmation, a form's values) for one call: one tool, its arguments,
// one caller. Signed and bound, it cannot be forged, altered or moved to
// another call, but until it expires the same caller could send it again,
// and each retry would run the tool again without the user being asked.
// For a tool that changes something, a confirmation therefore authorises
// one run: the engine claims the state in a Used set (and, with shared
// state, in Redis) before the tool runs, and a state already claimed is
// refused (ErrUsed). What that costs: a client that lost the response of a
// confirmed call cannot retry it with the same state; it calls again and
// the user is asked again. Read-only and idempotent tools, which a second
// run does not change, may run once per retry.

// ErrUsed is a requestState that has already run its tool.
var ErrUsed = errors.New("requestState has already been used to run the tool; call the tool again (the user is asked again)")

// ErrFull is a Used set full of states that have not expired: the call is
// refused rather than forgetting one (which would allow its replay).
var ErrFull = errors.New("too many confirmed calls in the last minutes to remember another; retry shortly")

// DefaultMaxUsed bounds a Used set: at about 100 bytes an entry, 6 MiB;
// 65,536 confirmed runs within a state's life (DefaultTTL, 10 minutes) is
// more than 100 a second.
const DefaultMaxUsed = 1 << 16

// ID identifies a sealed state for a Used set: a hash of its signature,
// which no two states share (each has its own nonce).
func ID(token string) string {
	_, sig, _ := strings.Cut(token, ".")
	sum := sha256.Sum256([]byte(sig))
	return hex.EncodeToString(sum[:16])
}

// Expiry returns when token expires. It reads a state Open has already
// verified: a token it cannot read expires now.
func Expiry(token string) time.Time {
	p, _, _ := strings.Cut(token, ".")
	payload, err := base64.RawURLEncoding.DecodeString(p)
	if err != nil {
		return time.Now()
	}
	var st struct {
		Expires int64 `json:"e"`
	}
	if json.Unmarshal(payload, &st) != nil {
		return time.Now()
	}
	return time.Unix(st.Expires, 0)
}

// Used remembers the states that have run a tool in this process, each
// until it expires (after which Open refuses it anyway). It is bounded
// (see ErrFull) and safe for concurrent use.
type Used struct {
	max int

	mu sync.Mutex
	m  map[string]time.Time // ID -> expiry

	// refused counts the replays refused (ErrUsed), here or by the shared
	// state; log bounds their log lines (see Refused).
	refused atomic.Uint64
	log     rate.Sometimes
}

// RefusedLogInterval is the least time between two log lines about
// refused replays: a client that replays a state in a loop costs a line
// per interval, not one per call (the counter counts every one).
const RefusedLogInterval = 10 * time.Second

// NewUsed returns an empty set of at most max states.
func NewUsed(max int) *Used {
	return &Used{max: max, m: map[string]time.Time{}, log: rate.Sometimes{Interval: RefusedLogInterval}}
}

// Refused counts one replay refused with ErrUsed and calls log with the
// total so far, at most once per RefusedLogInterval (the first refusal is
// always logged).
func (u *Used) Refused(log func(total uint64)) {
	n := u.refused.Add(1)
	u.log.Do(func() { log(n) })
}

// RefusedTotal is the number of replays refused since the set was made.
func (u *Used) RefusedTotal() uint64 { return u.refused.Load() }

// Claim records id, which expires at expires, as used. It returns false
// when id was used already, and ErrFull when the set holds max states that
// have not expired.
func (u *Used) Claim(id string, expires time.Time) (bool, error) {
	now := time.Now()
	u.mu.Lock()
	defer u.mu.Unlock()
	if exp, ok := u.m[id]; ok && now.Before(exp.Add(time.Second)) {
		return false, nil
	}
	if len(u.m) >= u.max {
		for k, exp := range u.m {
			// A second past the expiry: Open compares whole seconds.
			if !now.Before(exp.Add(time.Second)) {
				delete(u.m, k)
			}
		}
		if len(u.m) >= u.max {
			return false, ErrFull
		}
	}
	u.m[id] = expires
	return true, nil
}

// Forget removes id: a claim that did not authorise a run after all (the
// shared set could not be asked, and the tool fails closed).
func (u *Used) Forget(id string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	delete(u.m, id)
}

// Len is the number of states held.
func (u *Used) Len() int {
	u.mu.Lock()
	defer u.mu.Unlock()
	return len(u.m)
}
