package idempotency

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"
)

type typedCustomer struct {
	Name    string  `json:"name"`
	Email   *string `json:"email,omitempty"`
	Address *struct {
		City string `json:"city"`
	} `json:"address"`
}

type typedItem struct {
	SKU   string  `json:"sku"`
	Price float64 `json:"price"`
}

type typedAudit struct {
	CreatedBy string `json:"created_by"`
	Revision  int
}

type typedStamp struct{ v string }

func (s typedStamp) MarshalText() ([]byte, error) { return []byte(s.v), nil }

type typedOrder struct {
	typedAudit
	ID        string            `json:"id"`
	Customer  typedCustomer     `json:"customer"`
	Items     []typedItem       `json:"items"`
	Tags      map[string]string `json:"tags"`
	Count     int               `json:"count"`
	Ratio     float32           `json:"ratio"`
	Rush      bool              `json:"rush"`
	At        time.Time         `json:"at"`
	Due       *time.Time        `json:"due"`
	Blob      []byte            `json:"blob"`
	Raw       json.RawMessage   `json:"raw"`
	Extra     any               `json:"extra"`
	Stamp     typedStamp        `json:"stamp"`
	Secret    string            `json:"-"`
	Dash      string            `json:"-,"` //nolint:staticcheck // a field named "-", as encoding/json reads this tag
	Quoted    int               `json:"quoted,string"`
	OrderID   string            `json:"order-id"`
	Untagged  string
	Grid      [2][]int `json:"grid"`
	hidden    string
	Recursive *typedOrder `json:"parent"`
}

func TestCompileForAcceptsWhatTheTypeHas(t *testing.T) {
	c := newTestCompiler(t, Options{})
	typ := reflect.TypeFor[typedOrder]()
	for _, expr := range []string{
		`input.id`,
		`"order:" + input.id`,
		`input.customer.name`,
		`input.customer.email`,
		`input.customer.email == null ? "none" : input.customer.email`,
		`input.customer.address.city`,
		`input.items[0].sku`,
		`input.items.map(i, i.sku).join(",")`,
		`string(input.items[0].price)`,
		`input.tags["region"]`,
		`input.tags.region`,
		`string(input.count)`,
		`string(input.count + 1.0)`,
		`string(input.ratio)`,
		`input.rush ? "rush" : "normal"`,
		`input.at`,
		`input.due`,
		`input.blob`,
		`input.raw.anything.at.all`,
		`input.extra.whatever`,
		`input.stamp`,
		`input["-"]`,
		`input.quoted`,
		`input["order-id"]`,
		`input.Untagged`,
		`input.created_by + string(input.Revision)`,
		`string(input.grid[1][0])`,
		`input.parent.parent.id`,
		`has(input.customer.email) ? "a" : "b"`,
		`additional_metadata.tenant + input.id`,
		`additional_metadata.anything.goes`,
		`checksum(input.id)`,
	} {
		if _, err := c.CompileFor(expr, typ); err != nil {
			t.Errorf("CompileFor(%q): %v", expr, err)
		}
	}
}

func TestCompileForRefusesWhatTheTypeLacks(t *testing.T) {
	c := newTestCompiler(t, Options{})
	typ := reflect.TypeFor[typedOrder]()
	orderFields := "created_by, Revision, id, customer, items, tags, count, ratio, rush, at, due, blob, raw, extra, stamp, -, quoted, order-id, Untagged, grid, parent"
	cases := []struct {
		expr, message string
		line, column  int
	}{
		{`input.nope`, `input.nope: no field "nope" on typedOrder; fields: ` + orderFields, 1, 6},
		{`"k:" +
  input.customer.fullname`, `input.customer.fullname: no field "fullname" on typedCustomer; fields: name, email, address`, 2, 17},
		{`input.customer.address.town`, `input.customer.address.town: no field "town" on typedCustomer.address; fields: city`, 1, 23},
		{`input.items[0].skew`, `no field "skew" on typedItem; fields: sku, price`, 1, 15},
		{`input.items.map(i, i.cost).join(",")`, `no field "cost" on typedItem; fields: sku, price`, 1, 21},
		{`input["Secret"]`, `input.Secret: no field "Secret" on typedOrder; fields: ` + orderFields, 1, 6},
		{`input.hidden`, `input.hidden: no field "hidden" on typedOrder; fields: ` + orderFields, 1, 6},
		{`input.ID`, `input.ID: no field "ID" on typedOrder; fields: ` + orderFields, 1, 6},
		{`input.typedAudit.created_by`, `input.typedAudit: no field "typedAudit" on typedOrder; fields: ` + orderFields, 1, 6},
		{`input.count + "x"`, `found no matching overload for '_+_' applied to '(double, string)'`, 1, 13},
		{`input.count + 1`, `found no matching overload for '_+_' applied to '(double, int)'`, 1, 13},
		{`input.at.getHours()`, `found no matching overload for 'getHours' applied to 'string.()'`, 1, 18},
		{`input.tags.region + 1.0`, `found no matching overload for '_+_' applied to '(string, double)'`, 1, 19},
		{`input.items.sku`, `type 'list(idempotency.typedItem)' does not support field selection`, 1, 12},
		{`input.quoted + 1.0`, `found no matching overload for '_+_' applied to '(string, double)'`, 1, 14},
	}
	for _, tc := range cases {
		_, err := c.CompileFor(tc.expr, typ)
		var ce *Error
		if !errors.As(err, &ce) || !errors.Is(err, ErrCompile) {
			t.Errorf("CompileFor(%q) = %v, want a *Error", tc.expr, err)
			continue
		}
		if ce.Message != tc.message || ce.Line != tc.line || ce.Column != tc.column {
			t.Errorf("CompileFor(%q):\n got %d:%d %s\nwant %d:%d %s", tc.expr, ce.Line, ce.Column, ce.Message, tc.line, tc.column, tc.message)
		}
	}
}

func TestCompileForDynamicInputsAcceptAnything(t *testing.T) {
	c := newTestCompiler(t, Options{})
	for _, typ := range []reflect.Type{
		reflect.TypeFor[any](),
		reflect.TypeFor[map[string]any](),
		reflect.TypeFor[json.RawMessage](),
		reflect.TypeFor[typedStamp](),
		reflect.TypeFor[*map[string]any](),
		reflect.TypeFor[[]string](),
		nil,
	} {
		for _, expr := range []string{`input.nope`, `input.a.b.c + "x"`, `string(input.n + 1)`} {
			if _, err := c.CompileFor(expr, typ); err != nil {
				t.Errorf("CompileFor(%q, %v): %v", expr, typ, err)
			}
		}
	}
	// A map of typed values is checked below its keys.
	typ := reflect.TypeFor[map[string]typedItem]()
	if _, err := c.CompileFor(`input.any_key.sku`, typ); err != nil {
		t.Errorf("map of structs: %v", err)
	}
	if _, err := c.CompileFor(`input.any_key.nope`, typ); err == nil || !strings.Contains(err.Error(), `no field "nope" on typedItem`) {
		t.Errorf("map of structs, unknown field: %v", err)
	}
}

func TestCompileForLeavesKeysAlone(t *testing.T) {
	c := newTestCompiler(t, Options{})
	typ := reflect.TypeFor[typedOrder]()
	in := typedOrder{ID: "o-1", Customer: typedCustomer{Name: "ann"}, Items: []typedItem{{SKU: "s1", Price: 2.5}}, Count: 3, Quoted: 7, OrderID: "x-9", hidden: "not in the JSON"}
	in.CreatedBy = "bob"
	data, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	for expr, want := range map[string]string{
		`input.id`:          `o-1`,
		`input["order-id"]`: `x-9`,
		`input.customer.name + ":" + input.items[0].sku`:     `ann:s1`,
		`string(input.count) + string(input.items[0].price)`: `32.5`,
		`input.created_by`: `bob`,
		`input.quoted`:     `7`,
	} {
		typed, err := c.CompileFor(expr, typ)
		if err != nil {
			t.Fatalf("CompileFor(%q): %v", expr, err)
		}
		if plain := mustCompile(t, c, expr); typed != plain {
			t.Errorf("CompileFor(%q) is not Compile's expression", expr)
		}
		if key, err := typed.Key(data, nil); err != nil || key != want {
			t.Errorf("Key(%q) = %q, %v; want %q", expr, key, err, want)
		}
	}
}

// TestJSONFieldsMatchEncodingJSON checks the shape's field names against
// what encoding/json actually writes, for embedding and tag conflicts.
func TestJSONFieldsMatchEncodingJSON(t *testing.T) {
	type Inner struct {
		A string
		B string `json:"b"`
	}
	type Other struct {
		A string
		C string
	}
	type pointed struct{ P string }
	type outer struct {
		Inner
		Other
		*pointed
		B string
		D string `json:"C"`
		E string `json:"e,omitempty"`
		F int    `json:",omitempty"`
	}
	v := outer{pointed: &pointed{}, E: "e", F: 1}
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range jsonFields(reflect.TypeFor[outer]()) {
		names = append(names, f.name)
		if _, ok := m[f.name]; !ok {
			t.Errorf("field %q is not in %s", f.name, data)
		}
	}
	if len(names) != len(m) {
		t.Errorf("fields %v, JSON %s", names, data)
	}
}

type numericInput struct {
	Count  int            `json:"count"`
	Ratio  float64        `json:"ratio"`
	Big    uint64         `json:"big"`
	Name   string         `json:"name"`
	Rush   bool           `json:"rush"`
	Items  []string       `json:"items"`
	Nums   []int          `json:"nums"`
	Scores map[string]int `json:"scores"`
	Level  struct {
		Depth int `json:"depth"`
	} `json:"level"`
}

// TestCompileForAgreesWithEvaluation holds the typed check to what the
// interpreter does with a matching input: CompileFor accepts an expression
// exactly when evaluating it through Compile's expression gives no type
// error, whatever the numeric types it mixes. The one exception is marked
// constant: == or in between unrelated types, which the interpreter
// answers with a constant (false, or true for !=) and the check refuses as
// a mistake.
func TestCompileForAgreesWithEvaluation(t *testing.T) {
	c := newTestCompiler(t, Options{})
	typ := reflect.TypeFor[numericInput]()
	in := numericInput{Count: 3, Ratio: 2.5, Big: 7, Name: "ann", Rush: true,
		Items: []string{"a", "b", "c"}, Nums: []int{1, 2}, Scores: map[string]int{"x": 1}}
	in.Level.Depth = 2
	data, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		expr     string
		constant string // the key, for a comparison refused as constant
	}{
		// Equality and ordering across numeric types run.
		{expr: `string(input.count == 3)`},
		{expr: `string(input.count != 0)`},
		{expr: `string(3 == input.count)`},
		{expr: `string(input.count == 3u)`},
		{expr: `string(3u != input.big)`},
		{expr: `string(input.count == int(input.ratio))`},
		{expr: `string(input.count == size(input.items))`},
		{expr: `string(size(input.items) != input.count)`},
		{expr: `string(input.count > 2)`},
		{expr: `string(input.count >= 2u)`},
		{expr: `string(2 < input.ratio)`},
		{expr: `string(input.level.depth <= 2)`},
		{expr: `string(size(input.items) > input.ratio)`},
		{expr: `input.count == 3 ? "three" : "other"`},
		{expr: `input.rush && input.count > 2 ? "big" : "small"`},
		{expr: `string(input.scores.x == 1)`},
		{expr: `string(input.scores["x"] > 0)`},
		{expr: `string(input.nums.exists(n, n == 2))`},
		{expr: `string(input.nums.all(n, n > 0))`},
		{expr: `string(input.nums.filter(n, n > 1) == [2])`},
		{expr: `string(input.nums == [1, 2])`},
		{expr: `string([input.count] != [3])`},
		{expr: `string(input.scores == {"x": 1})`},
		{expr: `string({"c": input.count} == {"c": 3})`},
		// in follows equality.
		{expr: `string(input.count in [1, 2, 3])`},
		{expr: `string(input.count in [1u, 2u])`},
		{expr: `string(input.ratio in [1, 2.5])`},
		{expr: `string(2 in input.nums)`},
		{expr: `string(size(input.items) in input.nums)`},
		{expr: `string(input.count in {3: "a"})`},
		{expr: `string(input.count in {3u: "a"})`},
		// So do a list index and the branches of a conditional.
		{expr: `input.items[input.nums[0]]`},
		{expr: `input.items[1u]`},
		{expr: `input.items[input.level.depth]`},
		{expr: `string(input.nums[input.level.depth - 1.0] == 2)`},
		{expr: `string(input.rush ? input.count : 0)`},
		{expr: `string(input.rush ? 1u : input.ratio)`},
		// Arithmetic across numeric types does not run.
		{expr: `string(input.count + 1)`},
		{expr: `string(1 + input.count)`},
		{expr: `string(input.count - 1u)`},
		{expr: `string(input.count * 2)`},
		{expr: `string(input.ratio / 2)`},
		{expr: `string(input.count % 2)`},
		{expr: `string(input.count + size(input.items))`},
		{expr: `string(input.nums.map(n, n * 2)[0])`},
		// Within one type it does.
		{expr: `string(input.count + 1.0)`},
		{expr: `string(int(input.count) + 1)`},
		{expr: `string(input.nums.map(n, n * 2.0)[0])`},
		// Ordering against a non-number does not run.
		{expr: `string(input.count < "4")`},
		{expr: `string(input.name > 1)`},
		{expr: `string(input.rush < 1)`},
		// Equality between unrelated types is a constant.
		{expr: `string(input.name == 3)`, constant: "false"},
		{expr: `string(input.count == "3")`, constant: "false"},
		{expr: `string(input.count != true)`, constant: "true"},
		{expr: `string(input.count == null)`, constant: "false"},
		{expr: `string(input.name in [1, 2])`, constant: "false"},
		{expr: `string(input.count in ["3"])`, constant: "false"},
		{expr: `string(input.items == [1])`, constant: "false"},
	}
	for _, tc := range cases {
		key, evalErr := mustCompile(t, c, tc.expr).Key(data, nil)
		var ee *Error
		typeErr := errors.As(evalErr, &ee) && strings.Contains(ee.Message, "no such overload")
		if evalErr != nil && !typeErr {
			t.Errorf("%s: evaluating: %v, want a key or a type error", tc.expr, evalErr)
			continue
		}
		_, checkErr := c.CompileFor(tc.expr, typ)
		var ce *Error
		if checkErr != nil && !errors.As(checkErr, &ce) {
			t.Errorf("%s: CompileFor: %v, want nil or a *Error", tc.expr, checkErr)
			continue
		}
		switch {
		case tc.constant != "":
			if evalErr != nil || key != tc.constant || checkErr == nil {
				t.Errorf("%s: evaluates to %q, %v; checks with %v; want %q and a refusal", tc.expr, key, evalErr, checkErr, tc.constant)
			}
		case typeErr && checkErr == nil:
			t.Errorf("%s: accepted, but evaluating it fails: %v", tc.expr, evalErr)
		case !typeErr && checkErr != nil:
			t.Errorf("%s: refused, but it evaluates to %q: %v", tc.expr, key, checkErr)
		}
	}
}

// A mixed-numeric call that fails anyway is reported as the function
// written, and a call that only type-checks in its mixed form does not
// hide another error.
func TestCompileForMixedNumericErrors(t *testing.T) {
	c := newTestCompiler(t, Options{})
	typ := reflect.TypeFor[numericInput]()
	for expr, want := range map[string]string{
		`string(input.name == 3)`:                            `1:19: found no matching overload for '_==_' applied to '(string, int)'`,
		`string(input.count == 3 && input.name == 3)`:        `1:39: found no matching overload for '_==_' applied to '(string, int)'`,
		`string(input.count == 3) + string(input.count + 1)`: `1:47: found no matching overload for '_+_' applied to '(double, int)'`,
		`input.items[input.count] + input.nope`:              `1:33: input.nope: no field "nope" on numericInput; fields: count, ratio, big, name, rush, items, nums, scores, level`,
		`string(input.count in [1] == "x")`:                  `1:27: found no matching overload for '_==_' applied to '(bool, string)'`,
	} {
		_, err := c.CompileFor(expr, typ)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("CompileFor(%q) = %v\nwant %s", expr, err, want)
		}
	}
}
