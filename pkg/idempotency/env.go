package idempotency

import (
	"crypto/sha256"
	"encoding/hex"
	"unsafe"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/ext"
	"github.com/google/cel-go/interpreter"
)

// The variable names are Hatchet's, so expressions carry over unchanged.
const (
	varInput    = "input"
	varMetadata = "additional_metadata"
)

const checksumOverload = "checksum_string"

// newEnv declares what an expression may use: the two variables, the CEL
// strings extension and checksum().
func newEnv() (*cel.Env, error) {
	return cel.NewEnv(
		cel.Variable(varInput, cel.MapType(cel.StringType, cel.DynType)),
		cel.Variable(varMetadata, cel.MapType(cel.StringType, cel.DynType)),
		ext.Strings(),
		cel.Function("checksum",
			cel.Overload(checksumOverload, []*cel.Type{cel.StringType}, cel.StringType,
				cel.UnaryBinding(checksum))),
	)
}

// untrackedProgramOptions build the program used when costBound proves an
// evaluation cannot reach the limit.
func untrackedProgramOptions() []cel.ProgramOption {
	return []cel.ProgramOption{cel.EvalOptions(cel.OptOptimize)}
}

// programOptions are shared by every Expression of a Compiler and by the
// benchmarks' plain cel-go baseline, so the two measure the same work.
func programOptions(costLimit uint64) []cel.ProgramOption {
	return []cel.ProgramOption{
		cel.EvalOptions(cel.OptOptimize),
		cel.CostLimit(costLimit),
		// Hashing reads the whole string, so checksum is charged like other
		// string traversals instead of a flat unit; otherwise a large input
		// could be hashed many times within the limit.
		cel.CostTrackerOptions(interpreter.OverloadCostTracker(checksumOverload, checksumCost)),
	}
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

func checksumCost(args []ref.Val, _ ref.Val) *uint64 {
	cost := uint64(1)
	if len(args) == 1 {
		if s, ok := args[0].(types.String); ok {
			// Same factor cel applies to other string traversals (0.1 per byte).
			cost += uint64(len(s)) / 10
		}
	}
	return &cost
}
