package wire_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/taskq/taskq/internal/wire"
	"github.com/taskq/taskq/pkg/client"
)

// A key's JSON is the HTTP API's and the command line's: runId, ttlMs and
// expiresAt; the owner's task, strategy, status and attempt only while its
// record exists (attempt 0 included); no expiresAt when it does not expire.
func TestKeyJSON(t *testing.T) {
	at := time.Date(2026, 12, 1, 8, 0, 0, 123456789, time.FixedZone("CET", 3600))
	cases := []struct {
		name string
		key  client.KeyInfo
		want string
	}{
		{"held by a queued run", client.KeyInfo{Key: "order:1", OwnerRunID: "r1", TTL: 90 * time.Second, ExpiresAt: at,
			Task: "charge", Strategy: "ttl", OwnerStatus: client.StatusQueued},
			`{"key":"order:1","runId":"r1","ttlMs":90000,"expiresAt":"2026-12-01T07:00:00.123Z","task":"charge","strategy":"ttl","status":"queued","attempt":0}`},
		{"owner's record gone, no expiry", client.KeyInfo{Key: "order:2", OwnerRunID: "r2"},
			`{"key":"order:2","runId":"r2","ttlMs":0}`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := json.Marshal(wire.KeyOf(&tc.key))
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tc.want {
				t.Errorf("got  %s\nwant %s", got, tc.want)
			}
			// In a page of keys too.
			page, err := json.Marshal(wire.Page{Name: "keys", Items: wire.KeysOf([]*client.KeyInfo{&tc.key})})
			if err != nil || string(page) != `{"keys":[`+tc.want+`]}` {
				t.Errorf("page: %s, %v", page, err)
			}
		})
	}
}
