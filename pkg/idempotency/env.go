package idempotency

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"unsafe"

	"github.com/google/cel-go/cel"
	celenv "github.com/google/cel-go/common/env"
	"github.com/google/cel-go/common/operators"
	"github.com/google/cel-go/common/overloads"
	"github.com/google/cel-go/common/stdlib"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/common/types/traits"
)

// The variable names are Hatchet's, so expressions carry over unchanged.
const (
	varInput    = "input"
	varMetadata = "additional_metadata"
	// varSchedule is declared only by a schedule compiler (see
	// newScheduleCompiler): the schedule and the tick being fired.
	varSchedule = "schedule"
)

const (
	checksumFunction = "checksum"
	checksumOverload = "checksum_string"
)

// newEnv declares what an expression may use: the two variables, the CEL
// standard library, the CEL strings extension and checksum(), with every
// function that can build large values or work long bounded by l (see
// limits.go).
//
// A typed environment (see typedEnv) declares input as the given type, with
// the provider that knows its object types; nil means map<string, dyn>.
//
// With schedule set, the environment also declares the variable schedule
// (see newScheduleCompiler); a task's environment never does, so a task's
// expression that names it fails to compile as before.
func newEnv(l *evalLimits, schedule bool, input *types.Type, provider types.Provider) (*cel.Env, error) {
	// _+_ and matches come out of the standard library and back in with
	// bounded implementations; see redeclare.
	replaced := map[string]cel.FunctionOpt{
		operators.Add:     cel.SingletonBinaryBinding(l.concat, traits.AdderType),
		overloads.Matches: cel.SingletonBinaryBinding(l.matches, traits.MatcherType),
	}
	subset := celenv.NewLibrarySubset()
	var redeclared []cel.EnvOption
	for _, fn := range stdlib.Functions() {
		if impl, ok := replaced[fn.Name()]; ok {
			subset.AddExcludedFunctions(&celenv.Function{Name: fn.Name()})
			redeclared = append(redeclared, redeclare(fn, impl))
		}
	}
	if len(redeclared) != len(replaced) {
		return nil, fmt.Errorf("idempotency: the standard library lacks one of %d functions to bound", len(replaced))
	}
	strs, err := stringsOptions(l)
	if err != nil {
		return nil, err
	}
	if input == nil {
		input = cel.MapType(cel.StringType, cel.DynType)
	}
	opts := []cel.EnvOption{
		cel.StdLib(cel.StdLibSubset(subset)),
		cel.Variable(varInput, input),
		cel.Variable(varMetadata, cel.MapType(cel.StringType, cel.DynType)),
		cel.Function(checksumFunction,
			cel.Overload(checksumOverload, []*cel.Type{cel.StringType}, cel.StringType,
				cel.UnaryBinding(l.checksum))),
	}
	if schedule {
		opts = append(opts, cel.Variable(varSchedule, cel.MapType(cel.StringType, cel.DynType)))
	}
	if provider != nil {
		opts = append(opts, cel.CustomTypeProvider(provider))
	}
	opts = append(opts, redeclared...)
	opts = append(opts, strs...)
	return cel.NewCustomEnv(opts...)
}

// untrackedProgramOptions build the program used when costBound proves an
// evaluation cannot reach the limit.
func untrackedProgramOptions(l *evalLimits) []cel.ProgramOption {
	return []cel.ProgramOption{
		cel.EvalOptions(cel.OptOptimize),
		cel.OptimizeRegex(l.boundedRegex(overloads.Matches), l.boundedRegex(overloads.MatchesString)),
		cel.CustomDecoratorV2(l.boundedEquality()),
	}
}

// programOptions are shared by every Expression of a Compiler and by the
// benchmarks' plain cel-go baseline, so the two measure the same work.
func programOptions(l *evalLimits) []cel.ProgramOption {
	return append(untrackedProgramOptions(l),
		cel.CostLimit(l.cost),
		// Calls are charged by costModel, which prices by the arguments'
		// run-time types: input's fields are dyn, and cel-go's own prices
		// charge a call it dispatches at run time as if it were free.
		cel.CostTracking(newCostModel(l.cost)),
	)
}

// checksum returns the lowercase hex SHA-256 of its argument. Users wrap long
// or sensitive inputs in it to get a short, fixed-length key.
func checksum(v ref.Val) ref.Val {
	s, ok := v.(types.String)
	if !ok {
		return types.MaybeNoSuchOverloadErr(v)
	}
	// Sum256 only reads its argument, so the string's bytes are hashed in
	// place rather than copied.
	sum := sha256.Sum256(unsafe.Slice(unsafe.StringData(string(s)), len(s)))
	var buf [2 * sha256.Size]byte
	hex.Encode(buf[:], sum[:])
	return types.String(buf[:])
}
