package main

import (
	"context"
	"testing"
	"time"
)

// A follower of lake local under 8 writers for 2 s is given every table
// they created.
func TestFollowerMissesNothing(t *testing.T) {
	missed, total, err := measureFollowerMisses(context.Background(), 8, 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if missed != 0 || total == 0 {
		t.Fatalf("the follower missed %d of the %d tables created, want 0 of some", missed, total)
	}
	t.Logf("%d tables created, none missed", total)
}
