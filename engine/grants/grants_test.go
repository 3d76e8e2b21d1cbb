package grants_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/mcpd/mcpd/engine/grants"
	"github.com/mcpd/mcpd/internal/wait"
)

func TestSealedValuesOpenOnlyWhereTheyWereStored(t *testing.T) {
	key := make([]byte, grants.KeySize)
	s, err := grants.NewSealer(key)
	if err != nil {
		t.Fatal(err)
	}
	sealed := s.Seal([]byte("secret"), "grant:up:alice")
	if strings.Contains(string(sealed), "secret") {
		t.Fatal("sealed value holds the plain text")
	}
	if got, err := s.Open(sealed, "grant:up:alice"); err != nil || string(got) != "secret" {
		t.Fatalf("open: %q %v", got, err)
	}
	if _, err := s.Open(sealed, "grant:up:mallory"); err == nil {
		t.Fatal("a value copied under another principal's key opened")
	}
	other, _ := grants.NewSealer(append([]byte{1}, key[1:]...))
	if _, err := other.Open(sealed, "grant:up:alice"); err == nil {
		t.Fatal("opened with another key")
	}
	sealed[len(sealed)-1] ^= 1
	if _, err := s.Open(sealed, "grant:up:alice"); err == nil {
		t.Fatal("an altered value opened")
	}
	for _, n := range []int{0, 16, 31, 33} {
		if _, err := grants.NewSealer(make([]byte, n)); err == nil {
			t.Fatalf("a %d-byte key was accepted", n)
		}
	}
}

func TestGrantNeverPrintsItsTokens(t *testing.T) {
	g := &grants.Grant{AccessToken: "AT-secret", RefreshToken: "RT-secret", Principal: "oauth:alice", Upstream: "gh"}
	var b strings.Builder
	slog.New(slog.NewTextHandler(&b, nil)).Info("x", "grant", g)
	for _, s := range []string{fmt.Sprint(g), fmt.Sprintf("%v %+v %#v %s", g, g, g, g), b.String()} {
		if strings.Contains(s, "secret") {
			t.Fatalf("printed a token: %s", s)
		}
	}
}

func TestMemoryBounded(t *testing.T) {
	m := grants.NewMemory(3)
	ctx := context.Background()
	for i := 0; i < 5; i++ {
		if err := m.Set(ctx, fmt.Sprint("k", i), []byte("v"), time.Duration(i+1)*time.Minute); err != nil {
			t.Fatal(err)
		}
	}
	keys, _ := m.Keys(ctx, "k", 10)
	if len(keys) != 3 {
		t.Fatalf("holds %d values, bound is 3: %v", len(keys), keys)
	}
	if _, err := m.Get(ctx, "k0"); !errors.Is(err, grants.ErrNotFound) {
		t.Fatal("the value expiring first was kept")
	}
	if _, err := m.Take(ctx, "k4"); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Take(ctx, "k4"); !errors.Is(err, grants.ErrNotFound) {
		t.Fatal("taken twice")
	}
	_ = m.Set(ctx, "short", []byte("v"), time.Nanosecond)
	wait.Until(t, "a value past its lifetime is gone", func() bool {
		_, err := m.Get(ctx, "short")
		return errors.Is(err, grants.ErrNotFound)
	})
}
