package layoutgen

import (
	"strings"
	"testing"
)

func TestUpperSnake(t *testing.T) {
	for in, want := range map[string]string{
		"runStatus":           "RUN_STATUS",
		"ItemArgRunID":        "ITEM_ARG_RUN_ID",
		"runMaxDeliveries":    "RUN_MAX_DELIVERIES",
		"IDKey":               "ID_KEY",
		"MaxLingeringEntries": "MAX_LINGERING_ENTRIES",
		"entryRunID":          "ENTRY_RUN_ID",
	} {
		if got := UpperSnake(in); got != want {
			t.Errorf("UpperSnake(%q) = %q, want %q", in, got, want)
		}
	}
}

const sample = `package p

// Key parts.
//
//taskq:lua keys
const (
	keyRun   = "run:"  // the run
	keyRetry = "retry" // the retry set
)

//taskq:lua const
const (
	runStatus = "status" // its status
	maxThings = 3
)

// The spec.
//
//taskq:lua spec
const (
	specStrategy = iota
	specRetries
	specFieldCount
)

// Not marked: left out.
const other = "x"

// push_event.lua.
//
//taskq:lua script push_event
const (
	pushEventArgPrefix = 1 // key prefix
	pushEventArgCount  = 1
)
`

func TestGenerate(t *testing.T) {
	got, err := Generate("sample.go", []byte(sample))
	if err != nil {
		t.Fatal(err)
	}
	want := Header + `
-- The data layout`
	if !strings.HasPrefix(string(got), want) {
		t.Fatalf("generated file starts\n%s", got[:200])
	}
	for _, part := range []string{
		"-- Key parts.\n-- the run\nlocal function taskq_key_run(prefix, id)\n  return prefix .. 'run:' .. id\nend\n",
		"local function taskq_key_retry(prefix)\n  return prefix .. 'retry'\nend\n",
		"local RUN_STATUS = 'status' -- its status\nlocal MAX_THINGS = 3\n",
		"local function taskq_spec(strategy, retries)\n  return strategy .. ' ' .. retries\nend\n" +
			"local SPEC_STRATEGY = 1\nlocal SPEC_RETRIES = 2\n",
		"\n" + SectionPrefix + "push_event\n-- push_event.lua.\nlocal ARG_PREFIX = 1 -- key prefix\nlocal ARG_COUNT = 1\n",
	} {
		if !strings.Contains(string(got), part) {
			t.Errorf("generated file lacks\n%s\nin\n%s", part, got)
		}
	}
	if strings.Contains(string(got), "'x'") {
		t.Errorf("an unmarked constant was generated:\n%s", got)
	}
}

func TestGenerateRefusesWhatItCannotWrite(t *testing.T) {
	for _, c := range []struct{ src, want string }{
		{"package p\n//taskq:lua bogus\nconst a = 1\n", "bad directive"},
		{"package p\nimport \"time\"\n//taskq:lua const\nconst a = time.Second\n", "imports packages"},
		{"package p\n//taskq:lua const\nconst a = 1.5\n", "neither a string nor an integer"},
		{"package p\n//taskq:lua spec\nconst (\n\tspecA = 1\n\tspecFieldCount = 1\n)\n", "position 1, want 0"},
		{"package p\n//taskq:lua spec\nconst (\n\tspecA = 0\n\tspecFieldCount = 2\n)\n", "count says 2"},
		{"package p\n//taskq:lua script enqueue\nconst startArgX = 1\n", `does not start with "enqueue"`},
		{"package p\n//taskq:lua keys\nconst runKey = \"run:\"\n", "named key<Name>"},
	} {
		if _, err := Generate("bad.go", []byte(c.src)); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Generate(%q) = %v, want an error saying %q", c.src, err, c.want)
		}
	}
}
