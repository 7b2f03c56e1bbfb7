package idempotency

import (
	"encoding"
	"encoding/json"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode"

	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
)

// A task's input reaches its expressions as JSON decoded by encoding/json
// (json.go, fastjson.go): objects are maps, arrays lists, every number a
// double. To check an expression against a Go input type, the type
// checker is given that type's JSON shape: a struct is a CEL object type
// whose fields are its JSON names, with the types its JSON values decode
// to. The shape is only ever used for checking; evaluation stays on the
// decoded maps, so a checked expression gives exactly the keys it gave
// before.

var (
	timeType          = reflect.TypeFor[time.Time]()
	numberType        = reflect.TypeFor[json.Number]()
	jsonMarshalerType = reflect.TypeFor[json.Marshaler]()
	textMarshalerType = reflect.TypeFor[encoding.TextMarshaler]()
)

// shapeStruct is the JSON shape of one Go struct type.
type shapeStruct struct {
	name   string // for messages: the Go type's name
	fields map[string]*types.FieldType
	names  []string // JSON names, in the order encoding/json writes them
}

// shapeProvider declares the object types of one input type's JSON shape
// and defers everything else to a plain registry. Object fields have no
// accessors: the shape is for checking only.
type shapeProvider struct {
	*types.Registry
	structs map[string]*shapeStruct // by CEL type name

	// mu guards misses, the field lookups that failed during one check
	// (the caller holds mu across the check).
	mu     sync.Mutex
	misses []fieldMiss
}

// fieldMiss is a field the checker looked for on an object type that
// lacks it.
type fieldMiss struct{ typeName, field string }

func (p *shapeProvider) FindStructType(name string) (*types.Type, bool) {
	if _, ok := p.structs[name]; ok {
		return types.NewTypeTypeWithParam(types.NewObjectType(name)), true
	}
	return p.Registry.FindStructType(name)
}

func (p *shapeProvider) FindStructFieldNames(name string) ([]string, bool) {
	if s, ok := p.structs[name]; ok {
		return slices.Clone(s.names), true
	}
	return p.Registry.FindStructFieldNames(name)
}

func (p *shapeProvider) FindStructFieldType(name, field string) (*types.FieldType, bool) {
	if s, ok := p.structs[name]; ok {
		ft, found := s.fields[field]
		if !found {
			p.misses = append(p.misses, fieldMiss{name, field})
		}
		return ft, found
	}
	return p.Registry.FindStructFieldType(name, field)
}

func (p *shapeProvider) NewValue(name string, fields map[string]ref.Val) ref.Val {
	if _, ok := p.structs[name]; ok {
		return types.NewErr("%s values cannot be built in an expression", name)
	}
	return p.Registry.NewValue(name, fields)
}

// shapeOf returns the CEL type of input type t and the provider that
// declares its object types, or ok false when t's JSON shape is not an
// object with known fields (any, map[string]any, json.RawMessage, a
// json.Marshaler): such inputs stay map<string, dyn>.
func shapeOf(t reflect.Type) (input *types.Type, p *shapeProvider, ok bool) {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == nil || marshalsItself(t) {
		return nil, nil, false
	}
	b := &shapeBuilder{
		p:     &shapeProvider{Registry: types.NewEmptyRegistry(), structs: map[string]*shapeStruct{}},
		named: map[reflect.Type]string{},
	}
	switch t.Kind() {
	case reflect.Struct:
		input = b.celType(t, "")
	case reflect.Map:
		input = b.celType(t, "")
		if input.Kind() != types.MapKind || input.Parameters()[1].Kind() == types.DynKind {
			return nil, nil, false
		}
		// The top-level object is never null: a null input is refused
		// before any expression runs.
		input = types.NewMapType(types.StringType, input.Parameters()[1])
	default:
		return nil, nil, false
	}
	return input, b.p, true
}

type shapeBuilder struct {
	p     *shapeProvider
	named map[reflect.Type]string // struct types already declared, by CEL name
}

// marshalsItself reports whether encoding/json hands t's encoding to t
// itself, so its shape is unknown here; time.Time is known to be a string.
func marshalsItself(t reflect.Type) bool {
	if t == timeType {
		return false
	}
	pt := reflect.PointerTo(t)
	return t.Implements(jsonMarshalerType) || pt.Implements(jsonMarshalerType) ||
		t.Implements(textMarshalerType) || pt.Implements(textMarshalerType)
}

// celType is the CEL type of the JSON value encoding/json writes for a Go
// value of type t, as it reads back. where names the field for an unnamed
// struct type.
func (b *shapeBuilder) celType(t reflect.Type, where string) *types.Type {
	switch {
	case t == timeType:
		return types.StringType
	case t == numberType:
		return types.DoubleType
	case marshalsItself(t):
		return types.DynType
	}
	switch t.Kind() {
	case reflect.Bool:
		return types.BoolType
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
		reflect.Float32, reflect.Float64:
		// encoding/json decodes every number into a float64.
		return types.DoubleType
	case reflect.String:
		return types.StringType
	case reflect.Pointer:
		elem := b.celType(t.Elem(), where)
		return nullable(elem)
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Uint8 && !marshalsItself(t.Elem()) {
			// []byte is written as a base64 string.
			return types.NewNullableType(types.StringType)
		}
		// A nil slice is written as null.
		return nullable(types.NewListType(b.celType(t.Elem(), where)))
	case reflect.Array:
		return types.NewListType(b.celType(t.Elem(), where))
	case reflect.Map:
		switch k := t.Key(); {
		case k.Kind() == reflect.String,
			k.Kind() >= reflect.Int && k.Kind() <= reflect.Uintptr,
			k.Implements(textMarshalerType):
			// Every key is written as a JSON string; a nil map as null.
			return nullable(types.NewMapType(types.StringType, b.celType(t.Elem(), where)))
		}
		return types.DynType // encoding/json refuses other keys
	case reflect.Struct:
		return types.NewObjectType(b.declare(t, where))
	}
	return types.DynType // interfaces; kinds encoding/json refuses
}

// nullable makes t accept null; an object type and dyn already do.
func nullable(t *types.Type) *types.Type {
	switch t.Kind() {
	case types.StructKind, types.DynKind:
		return t
	}
	return types.NewNullableType(t)
}

// declare registers struct type t's shape and returns its CEL name.
func (b *shapeBuilder) declare(t reflect.Type, where string) string {
	if name, ok := b.named[t]; ok {
		return name
	}
	short := t.Name()
	name := t.String()
	if short == "" {
		short, name = where, "struct "+where
	}
	// A name must not read as a path from a variable: the checker would
	// resolve input.X as the type rather than a field of input.
	if first, _, _ := strings.Cut(name, "."); first == varInput || first == varMetadata || first == varSchedule {
		name = "go." + name
	}
	for base, n := name, 2; b.p.structs[name] != nil; n++ {
		name = base + "#" + strconv.Itoa(n)
	}
	s := &shapeStruct{name: short, fields: map[string]*types.FieldType{}}
	b.named[t] = name
	b.p.structs[name] = s
	for _, f := range jsonFields(t) {
		var ft *types.Type
		if f.quoted {
			// ",string" writes the value inside a JSON string.
			ft = types.StringType
			if f.typ.Kind() == reflect.Pointer {
				ft = types.NewNullableType(ft)
			}
		} else {
			ft = b.celType(f.typ, short+"."+f.name)
		}
		s.fields[f.name] = &types.FieldType{Type: ft}
		s.names = append(s.names, f.name)
	}
	return name
}

// jsonField is a struct field as encoding/json writes it.
type jsonField struct {
	name   string
	tagged bool
	index  []int
	typ    reflect.Type
	quoted bool
}

// jsonFields lists the fields encoding/json writes for struct type t, by
// its rules: json tag names, "-" left out, exported fields only, embedded
// structs flattened, and among fields of one name the shallowest (then the
// tagged) one wins, or none when that leaves a tie.
func jsonFields(t reflect.Type) []jsonField {
	var current []jsonField
	next := []jsonField{{typ: t}}
	var count, nextCount map[reflect.Type]int
	visited := map[reflect.Type]bool{}
	var fields []jsonField
	for len(next) > 0 {
		current, next = next, current[:0]
		count, nextCount = nextCount, map[reflect.Type]int{}
		for _, f := range current {
			if visited[f.typ] {
				continue
			}
			visited[f.typ] = true
			for i := range f.typ.NumField() {
				sf := f.typ.Field(i)
				if sf.Anonymous {
					et := sf.Type
					if et.Kind() == reflect.Pointer {
						et = et.Elem()
					}
					if !sf.IsExported() && et.Kind() != reflect.Struct {
						continue
					}
				} else if !sf.IsExported() {
					continue
				}
				tag := sf.Tag.Get("json")
				if tag == "-" {
					continue
				}
				name, opts, _ := strings.Cut(tag, ",")
				if !validTagName(name) {
					name = ""
				}
				index := append(slices.Clone(f.index), i)
				ft := sf.Type
				if ft.Name() == "" && ft.Kind() == reflect.Pointer {
					ft = ft.Elem()
				}
				quoted := false
				if slices.Contains(strings.Split(opts, ","), "string") {
					switch ft.Kind() {
					case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
						reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
						reflect.Float32, reflect.Float64, reflect.String:
						quoted = true
					}
				}
				if name != "" || !sf.Anonymous || ft.Kind() != reflect.Struct {
					field := jsonField{name: name, tagged: name != "", index: index, typ: sf.Type, quoted: quoted}
					if field.name == "" {
						field.name = sf.Name
					}
					fields = append(fields, field)
					if count[f.typ] > 1 {
						// Two embeddings of one type at this depth: the
						// duplicate makes the field ambiguous below.
						fields = append(fields, field)
					}
					continue
				}
				nextCount[ft]++
				if nextCount[ft] == 1 {
					next = append(next, jsonField{name: ft.Name(), index: index, typ: ft})
				}
			}
		}
	}
	sort.Slice(fields, func(i, j int) bool {
		x, y := fields[i], fields[j]
		if x.name != y.name {
			return x.name < y.name
		}
		if len(x.index) != len(y.index) {
			return len(x.index) < len(y.index)
		}
		if x.tagged != y.tagged {
			return x.tagged
		}
		return slices.Compare(x.index, y.index) < 0
	})
	out := fields[:0]
	for i := 0; i < len(fields); {
		j := i + 1
		for j < len(fields) && fields[j].name == fields[i].name {
			j++
		}
		group := fields[i:j]
		if len(group) == 1 || len(group[0].index) != len(group[1].index) || group[0].tagged != group[1].tagged {
			out = append(out, group[0])
		}
		i = j
	}
	sort.Slice(out, func(i, j int) bool { return slices.Compare(out[i].index, out[j].index) < 0 })
	return out
}

// validTagName is encoding/json's test of a json tag's name.
func validTagName(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		switch {
		case strings.ContainsRune("!#$%&()*+-./:;<=>?@[]^_{|}~ ", c):
		case !unicode.IsLetter(c) && !unicode.IsDigit(c):
			return false
		}
	}
	return true
}
