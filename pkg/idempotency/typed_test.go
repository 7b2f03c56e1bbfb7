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
		var ce *CompileError
		if !errors.As(err, &ce) || !errors.Is(err, ErrCompile) {
			t.Errorf("CompileFor(%q) = %v, want a *CompileError", tc.expr, err)
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
		if key, err := typed.KeyJSON(data, nil); err != nil || key != want {
			t.Errorf("KeyJSON(%q) = %q, %v; want %q", expr, key, err, want)
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
