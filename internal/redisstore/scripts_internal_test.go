package redisstore

import (
	"strings"
	"testing"
)

// Every script, in every form the store sends, defines each taskq_
// function it calls: none lacks a module it needs.
func TestEveryScriptDefinesTheFunctionsItCalls(t *testing.T) {
	for _, sc := range append(allScripts[:len(allScripts):len(allScripts)], scriptForms...) {
		if err := checkCalls(sc.src); err != nil {
			t.Errorf("script %s: %v", sc.name, err)
		}
	}
}

// A script that calls a taskq_ function no module of it defines is refused
// when it is assembled, naming the line and the function; comments and
// strings naming one are not calls.
func TestCheckCallsFindsAFunctionNoModuleDefines(t *testing.T) {
	ok := "local function taskq_a(x)\n  return x\nend\n-- taskq_b(1) in a comment\nreturn taskq_a('taskq_c(')\n"
	if err := checkCalls(ok); err != nil {
		t.Fatalf("checkCalls of a script defining what it calls: %v", err)
	}
	err := checkCalls(ok + "local y = taskq_missing(2)\n")
	if err == nil || !strings.Contains(err.Error(), "line 6 calls taskq_missing") {
		t.Fatalf("checkCalls of a script calling an undefined function = %v", err)
	}
}
