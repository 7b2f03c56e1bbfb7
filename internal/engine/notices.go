package engine

// NoticeKind says what a Notice reports.
type NoticeKind int

const (
	// NoticeMessage is a notice published on Channel, with its Payload.
	NoticeMessage NoticeKind = iota
	// NoticeSubscribed says Redis confirmed the subscription to Channel:
	// a notice published from then on is received. It comes again after
	// an interruption, once the channel is subscribed anew.
	NoticeSubscribed
	// NoticeInterrupted says the connection carrying Channels broke (or,
	// on a cluster, their slot moved to another master): notices
	// published on them until their next NoticeSubscribed may be lost.
	// They are subscribed again without being asked.
	NoticeInterrupted
)

// Notice is what a Notices subscription receives.
type Notice struct {
	Kind     NoticeKind
	Channel  string   // NoticeMessage, NoticeSubscribed
	Payload  string   // NoticeMessage
	Channels []string // NoticeInterrupted
}
