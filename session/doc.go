// Package session is the Session aggregate: one agent conversation, the
// behavior chosen when it was created, and its lifecycle state machine. It
// is pure domain code: no I/O, no clocks, no persistence (package sessnap
// owns the persisted form).
//
// # Lifecycle
//
// A session is idle, running, awaiting (a turn parked on an approval), or in
// one of the terminal states completed, stopped, cancelled and failed. The
// legal transitions are the one table in transitions.go; an illegal event
// returns a *TransitionError (errors.Is ErrIllegalTransition) and changes
// nothing; terminal states accept no event.
//
// # Invariants
//
//   - Behavior chosen at creation (Config: mode, limits, kind, relationship,
//     profile, provider/model, reasoning effort, debug ceilings, environment
//     reference, placement, authority) cannot change afterwards. The
//     aggregate keeps its state unexported and hands out copies; where the
//     seed package exposed exported fields (ID, State, Mode, Conversation,
//     Limits, Counters, EnvironmentRef, CreatedAt) this package exposes
//     accessor methods of the same names, so the invariants cannot be
//     bypassed.
//   - PendingAsk is readable only while awaiting; PauseForApproval is legal
//     only from running.
//   - RecordedStopReason returns exactly what the terminal transition
//     recorded; StopReason may derive a reason from exhausted limits.
//   - The owner is write-once (RestoreLabels).
//   - Usage is what the MaxRunTokens brake is checked against
//     (Usage.RunTokens), so persisting it makes the budget survive a restart.
//     A message's own Usage is a record of the response that produced it;
//     only AddUsage moves the budget.
//   - Labels are the holder's to set and remove in any state (SetLabel,
//     RemoveLabel), within the bounds ValidateLabel states.
//   - The workspace's project is fixed once set; its working directory and
//     branch follow the agent (SetWorkspace).
//   - An imported session's origin names its source for good; what the
//     latest import read is replaced by each re-import (SetOrigin).
//   - The conversation only grows: messages are appended, never edited or
//     removed, and a message's ID is unique within it. A compaction message
//     replaces earlier messages for the model, not in the conversation.
//     (A store's revisions are snapshots: a writer that removes the last
//     messages, as the Agents SDK's pop_item and clear_session ask of
//     sessions serve, stores a revision whose conversation is a prefix of
//     the one before, restored into a new Session; the earlier revisions
//     keep every message.)
//
// # Sub-agents
//
// A sub-agent runs in a session of its own: kind KindSubagent, with a
// SessionRelationship naming its parent, its root, its role and the
// parent's tool call that spawned it. The parent's conversation holds that
// tool call and its result, never the sub-agent's messages. So each
// sub-agent keeps its own lifecycle, limits, usage and model, and a store
// lists a parent's sub-agents like any other children.
//
// # Usage
//
//	s, err := session.New(session.Config{
//		ID: "s1", CreatedAt: time.Now(), Kind: session.KindPrimary,
//		EnvironmentRef: session.EnvironmentRef{Provider: "local", ID: "laptop", Revision: "1"},
//	})
//	_ = s.SetLabel("team", "tools")
//	_ = s.SetWorkspace(session.Workspace{Project: "/src/app", Dir: "/src/app/cmd", Branch: "main"})
//	_ = s.AppendMessage(session.TextMessage(session.RoleUser, "hello", time.Now()))
//	_ = s.BeginTurn()
//	_ = s.AddUsage(session.Usage{InputTokens: 12, OutputTokens: 40})
//	_ = s.EndTurn()
package session
