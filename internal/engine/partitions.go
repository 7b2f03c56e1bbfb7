package engine

import (
	"errors"
	"fmt"
	"hash/fnv"
	"strconv"
	"strings"
)

// Limits and defaults of a namespace's partition count.
const (
	// PartitionsMax bounds P: a partition costs every idle worker a
	// blocking read and a few commands a second (docs/scaling.md).
	PartitionsMax = 1024
	// PartitionsDefault is P for a namespace first used on a single node.
	// One first used on a Redis Cluster records the number of masters
	// serving slots then (redisstore.DefaultPartitions).
	PartitionsDefault = 1
	// NamespaceMaxLen bounds a namespace name.
	NamespaceMaxLen = 64
)

// ErrInvalidNamespace matches every *InvalidNamespaceError.
var ErrInvalidNamespace = errors.New("invalid namespace")

// InvalidNamespaceError says a namespace name is not 1 to NamespaceMaxLen
// characters of A-Z, a-z, 0-9, '_', '.', ':' and '-'. Names are held to
// those so that a name can never hold the '{', '}' and '#' that make up
// the partitions' hash tags.
type InvalidNamespaceError struct {
	Namespace string
	// Problem says what is wrong ("is empty", "is 70 characters, over
	// the limit of 64", "holds '{' at byte 3").
	Problem string
}

func (e *InvalidNamespaceError) Error() string {
	return fmt.Sprintf("namespace %q %s: a namespace is 1 to %d characters of A-Z a-z 0-9 _ . : -", e.Namespace, e.Problem, NamespaceMaxLen)
}

// Is makes errors.Is(err, ErrInvalidNamespace) hold.
func (e *InvalidNamespaceError) Is(target error) bool { return target == ErrInvalidNamespace }

// ValidateNamespace returns an *InvalidNamespaceError for a name that is
// not a valid namespace, nil otherwise.
func ValidateNamespace(ns string) error {
	switch {
	case ns == "":
		return &InvalidNamespaceError{Namespace: ns, Problem: "is empty"}
	case len(ns) > NamespaceMaxLen:
		return &InvalidNamespaceError{Namespace: ns, Problem: fmt.Sprintf("is %d characters, over the limit of %d", len(ns), NamespaceMaxLen)}
	}
	for i := 0; i < len(ns); i++ {
		c := ns[i]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '.' || c == ':' || c == '-' {
			continue
		}
		return &InvalidNamespaceError{Namespace: ns, Problem: fmt.Sprintf("holds %q at byte %d", c, i)}
	}
	return nil
}

// ErrPartitionsMismatch matches every *PartitionsMismatchError.
var ErrPartitionsMismatch = errors.New("partition count differs from the namespace's")

// PartitionsMismatchError says a client or worker was configured with a
// partition count other than the one its namespace recorded when it was
// first used. P cannot change once a namespace holds data: every key and
// run would move.
type PartitionsMismatchError struct {
	Namespace  string
	Configured int
	Recorded   int
}

func (e *PartitionsMismatchError) Error() string {
	return fmt.Sprintf("namespace %q has %d partitions, recorded when it was first used, not the %d configured: "+
		"configure %d, or leave the partition count unset to adopt the recorded one", e.Namespace, e.Recorded, e.Configured, e.Recorded)
}

// Is makes errors.Is(err, ErrPartitionsMismatch) hold.
func (e *PartitionsMismatchError) Is(target error) bool { return target == ErrPartitionsMismatch }

// CheckPartitions says why n cannot be a configured partition count (0
// means unset: adopt the recorded count, or the default).
func CheckPartitions(n int) error {
	if n < 0 || n > PartitionsMax {
		return fmt.Errorf("partitions %d: must be from 1 to %d (0: adopt the namespace's)", n, PartitionsMax)
	}
	return nil
}

// KeyPartition is the partition of idempotency key key in namespace ns of
// n partitions: FNV-1a (32 bits) of "<ns>\x00<key>", modulo n. It depends
// on nothing else, so two tasks deriving the same key collide as they do
// in one partition.
func KeyPartition(ns, key string, n int) int {
	if n <= 1 {
		return 0
	}
	h := fnv.New32a()
	_, _ = h.Write([]byte(ns))
	_, _ = h.Write([]byte{0})
	_, _ = h.Write([]byte(key))
	return int(h.Sum32() % uint32(n))
}

// RunPartition reads the partition a run ID names: 0 for a plain ID (a
// UUIDv7, as every run ID was before partitions), i for "<id>.<i>" with i a
// decimal from 1 without leading zeros. ok is false for an ID whose suffix
// is not one (such a run cannot exist: a lookup of it finds nothing). It
// does not know P: Partitions.OfRun also checks the range. Event IDs name
// their partition the same way.
func RunPartition(id string) (partition int, ok bool) {
	dot := strings.LastIndexByte(id, '.')
	if dot < 0 {
		return 0, true
	}
	s := id[dot+1:]
	if s == "" || s[0] == '0' || len(s) > 6 {
		return 0, false
	}
	n := 0
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, false
		}
		n = 10*n + int(s[i]-'0')
	}
	return n, true
}

// InPartition returns the ID that names partition part for base, a plain
// ID: base itself for partition 0, "<base>.<part>" otherwise.
func InPartition(base string, part int) string {
	if part <= 0 {
		return base
	}
	return base + "." + strconv.Itoa(part)
}
