package storetest

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/andonhq/andon/agent"
)

func testRunGetUnknown(t *testing.T, s agent.Store) {
	if _, err := s.RunGet(t.Context(), "nope"); !errors.Is(err, agent.ErrNotFound) {
		t.Fatalf("RunGet(unknown) = %v, want agent.ErrNotFound", err)
	}
}

func testRunInsertRoundTrip(t *testing.T, s agent.Store) {
	want := &agent.Run{
		ID:            "r1",
		Owner:         "alice",
		Request:       json.RawMessage(`{"prompt":"hi","model":"script","script":[{"say":"x"}]}`),
		Status:        agent.StatusRunning,
		LeaseOwner:    "worker:1",
		LeaseExpires:  at(15 * time.Minute),
		PendingEffect: agent.EffectIdempotentWrite,
		Suspended:     []byte(`{"transcript":[]}`),
		Attempts:      2,
		CreatedAt:     at(-time.Minute),
		StartedAt:     at(-30 * time.Second),
	}
	insert(t, s, want)
	mustBe(t, "RunGet after RunInsert", get(t, s, "r1"), want)

	done := &agent.Run{
		ID: "r2", Owner: "bob", Request: json.RawMessage(`{"prompt":"x"}`),
		Status: agent.StatusFailed, Reason: agent.ReasonModelFailed, Error: "model: status 500",
		PendingEffect: agent.EffectNonIdempotentWrite,
		CreatedAt:     at(0), StartedAt: at(time.Second), FinishedAt: at(2 * time.Second),
	}
	insert(t, s, done)
	mustBe(t, "RunGet of a finished run", get(t, s, "r2"), done)
}

func testRunInsertDefaults(t *testing.T, s agent.Store) {
	before := time.Now()
	r := &agent.Run{ID: "r1", Owner: "alice", Request: json.RawMessage(`{"prompt":"hi"}`)}
	insert(t, s, r)
	if r.Status != agent.StatusQueued {
		t.Fatalf("RunInsert left Status %q, want queued", r.Status)
	}
	if r.CreatedAt.Before(before.Add(-time.Second)) || r.CreatedAt.After(time.Now().Add(time.Second)) {
		t.Fatalf("RunInsert set CreatedAt %v, want about now", r.CreatedAt)
	}
	got := get(t, s, "r1")
	if got.Status != agent.StatusQueued || !got.CreatedAt.Equal(r.CreatedAt) || got.LeaseOwner != "" ||
		!got.LeaseExpires.IsZero() || got.PendingEffect != "" || got.Suspended != nil || got.Attempts != 0 ||
		!got.StartedAt.IsZero() || !got.FinishedAt.IsZero() {
		t.Fatalf("a fresh run reads %+v; want queued, created %v, nothing else set", got, r.CreatedAt)
	}
}

func testRunInsertDuplicate(t *testing.T, s agent.Store) {
	first := insert(t, s, newRun("r1", t0))
	second := newRun("r1", at(time.Second))
	second.Owner = "mallory"
	if err := s.RunInsert(t.Context(), second); err == nil {
		t.Fatal("RunInsert of an existing id succeeded")
	}
	mustBe(t, "the first run after a refused insert", get(t, s, "r1"), first)
}

func testEveryStatusStored(t *testing.T, s agent.Store) {
	for i, st := range []agent.Status{agent.StatusQueued, agent.StatusRunning, agent.StatusWaitingForApproval,
		agent.StatusWaitingForInput, agent.StatusCompleted, agent.StatusFailed, agent.StatusCancelled} {
		r := newRun(string(st), at(time.Duration(i)*time.Second))
		r.Status = st
		insert(t, s, r)
		mustBe(t, "run in status "+string(st), get(t, s, r.ID), r)
	}
}

func testRunStatuses(t *testing.T, s agent.Store) {
	ctx := t.Context()
	got, err := s.RunStatuses(ctx, nil)
	if err != nil || len(got) != 0 {
		t.Fatalf("RunStatuses(nil) = %v, %v; want an empty map", got, err)
	}
	const known, unknown = 300, 900
	want := map[string]agent.Status{}
	var ids []string
	for i := range known {
		id := fmt.Sprintf("r%03d", i)
		insert(t, s, newRun(id, at(time.Duration(i)*time.Millisecond)))
		want[id] = agent.StatusQueued
		if i%3 == 0 {
			ok, err := s.RunFinish(ctx, id, "", agent.StatusCancelled, agent.ReasonCancelled, "")
			mustWin(t, "cancel", ok, err)
			want[id] = agent.StatusCancelled
		}
		ids = append(ids, id)
	}
	for i := range unknown {
		ids = append(ids, fmt.Sprintf("gone-%d", i))
	}
	ids = append(ids, "r000", "gone-0") // duplicates are harmless
	rand.Shuffle(len(ids), func(i, j int) { ids[i], ids[j] = ids[j], ids[i] })
	got, err = s.RunStatuses(ctx, ids)
	if err != nil {
		t.Fatalf("RunStatuses(%d ids): %v", len(ids), err)
	}
	if len(got) != known {
		t.Fatalf("RunStatuses returned %d runs, want the %d that exist", len(got), known)
	}
	for id, st := range want {
		if got[id] != st {
			t.Fatalf("RunStatuses[%s] = %q, want %q", id, got[id], st)
		}
	}
	got, err = s.RunStatuses(ctx, []string{"gone"})
	if err != nil || len(got) != 0 {
		t.Fatalf("RunStatuses(unknown) = %v, %v; want an empty map", got, err)
	}
}

func listIDs(t *testing.T, s agent.Store, f agent.RunFilter) []string {
	t.Helper()
	runs, err := s.RunList(t.Context(), f)
	if err != nil {
		t.Fatalf("RunList(%+v): %v", f, err)
	}
	ids := []string{}
	for _, r := range runs {
		ids = append(ids, r.ID)
	}
	return ids
}

func testRunList(t *testing.T, s agent.Store) {
	ctx := t.Context()
	if got := listIDs(t, s, agent.RunFilter{}); len(got) != 0 {
		t.Fatalf("RunList on an empty store = %v", got)
	}
	// r1 … r6, oldest first; bob owns the even ones; r2 and r5 are cancelled.
	for i := 1; i <= 6; i++ {
		r := newRun(fmt.Sprintf("r%d", i), at(time.Duration(i)*time.Second))
		if i%2 == 0 {
			r.Owner = "bob"
		}
		insert(t, s, r)
	}
	for _, id := range []string{"r2", "r5"} {
		ok, err := s.RunFinish(ctx, id, "", agent.StatusCancelled, agent.ReasonCancelled, "")
		mustWin(t, "cancel", ok, err)
	}
	for _, c := range []struct {
		f    agent.RunFilter
		want []string
	}{
		{agent.RunFilter{}, []string{"r6", "r5", "r4", "r3", "r2", "r1"}},
		{agent.RunFilter{Owner: "bob"}, []string{"r6", "r4", "r2"}},
		{agent.RunFilter{Status: agent.StatusCancelled}, []string{"r5", "r2"}},
		{agent.RunFilter{Owner: "alice", Status: agent.StatusQueued}, []string{"r3", "r1"}},
		{agent.RunFilter{Owner: "carol"}, []string{}},
		{agent.RunFilter{Limit: 2}, []string{"r6", "r5"}},
		{agent.RunFilter{Owner: "bob", Limit: 1}, []string{"r6"}},
	} {
		if got := listIDs(t, s, c.f); !slices.Equal(got, c.want) {
			t.Errorf("RunList(%+v) = %v, want %v", c.f, got, c.want)
		}
	}
	runs, err := s.RunList(ctx, agent.RunFilter{Limit: 1})
	if err != nil || len(runs) != 1 {
		t.Fatalf("RunList = %v, %v", runs, err)
	}
	mustBe(t, "a listed run", runs[0], get(t, s, "r6"))
}

func testRunListPaging(t *testing.T, s agent.Store) {
	ctx := t.Context()
	// Ties on created_at are ordered by id, descending, so pages neither
	// skip nor repeat a run.
	var all []string
	for i := range 9 {
		id := fmt.Sprintf("r%d", i)
		insert(t, s, newRun(id, at(time.Duration(i/3)*time.Second)))
		all = append(all, id)
	}
	slices.Reverse(all)
	var paged []string
	before := ""
	for range 10 {
		page := listIDs(t, s, agent.RunFilter{Limit: 2, Before: before})
		if len(page) == 0 {
			break
		}
		paged = append(paged, page...)
		before = page[len(page)-1]
	}
	if !slices.Equal(paged, all) {
		t.Fatalf("pages of 2 = %v, want %v", paged, all)
	}
	if got := listIDs(t, s, agent.RunFilter{Before: "r3", Owner: "alice"}); !slices.Equal(got, []string{"r2", "r1", "r0"}) {
		t.Fatalf("RunList(before r3) = %v, want [r2 r1 r0]", got)
	}
	if _, err := s.RunList(ctx, agent.RunFilter{Before: "gone"}); !errors.Is(err, agent.ErrNotFound) {
		t.Fatalf("RunList(before an unknown run) = %v, want agent.ErrNotFound", err)
	}
}

func testRunListDefaultLimit(t *testing.T, s agent.Store) {
	n := agent.DefaultRunListLimit + 5
	for i := range n {
		insert(t, s, newRun(fmt.Sprintf("r%04d", i), at(time.Duration(i)*time.Millisecond)))
	}
	got := listIDs(t, s, agent.RunFilter{})
	if len(got) != agent.DefaultRunListLimit || got[0] != fmt.Sprintf("r%04d", n-1) {
		t.Fatalf("RunList(zero filter) returned %d runs starting at %v; want the newest %d",
			len(got), got[:min(1, len(got))], agent.DefaultRunListLimit)
	}
}
