package storetest

// check is one contract check: a named subtest run on a fresh store.
type check struct {
	name string
	run  func(f *fixture)
}

// checks is the index of the contract: every check the suite runs, under
// the name of its subtest, grouped by concern, each group's checks in the
// file its heading names.
var checks = []check{
	// Creating a session (create.go).
	{"CreateThenLoad", checkCreateThenLoad},
	{"CreateExistingIsErrExists", checkCreateExisting},
	{"CreateHoldsLease", checkCreateHoldsLease},
	{"NewIDSortsByCreationAndIsValid", checkNewID},

	// Appending (append.go).
	{"RevisionsStartAtOneStepByOne", checkRevisionsStepByOne},
	{"StaleExpectedIsErrConflict", checkStaleExpected},
	{"ConcurrentAppendsOneWinnerPerRevision", checkOneWinnerPerRevision},
	{"ConcurrentAppendsLoseNoUpdate", checkNoLostUpdate},
	{"RecordTimesNonDecreasing", checkRecordTimes},
	{"RecordsRestoreToAppendedSessions", checkRecordsRestore},
	{"EachStateRoundTrips", checkEachStateRoundTrips},
	{"AppendedSnapshotIsCopied", checkAppendCopies},
	{"AppendAfterReleaseIsErrClosed", checkAppendAfterRelease},

	// Redaction (redact.go).
	{"RedactsSecretsBeforeWriting", checkRedactsBeforeWriting},
	{"RedactionPerCall", checkRedactPerCall},
	// Resuming (resume.go).
	{"ResumedFirstAppendIsADelta", checkResumeDelta},

	// The session handle (handle.go).
	{"HandleDrivesAnAgentsTurns", checkHandleTurns},
	{"HandleKeepsAndDerivesMessageIDs", checkHandleKeepsIDs},
	{"HandleRewindsInPlace", checkHandleRewind},
	{"HandleRewindsAndResumes", checkHandleRewindsAndResumes},
	{"ForkAtMessage", checkForkAtMessage},
	{"RawRewindKeepsMessageIDsUnique", checkRawRewindIDs},

	// Leases (lease.go).
	{"TryAcquireHeldSaysWho", checkTryAcquireHeld},
	{"GenerationsIncreaseAcrossAcquisitions", checkGenerationsIncrease},
	{"SupersededWriterGetsErrLeaseLost", checkSuperseded},
	{"AcquireAfterSupersedeReportsStale", checkAcquireAfterSupersede},
	{"AcquireReturnsPromptlyWhenContextDone", checkAcquireContextDone},
	{"AcquireWaitsForRelease", checkAcquireWaits},
	{"ReleaseThenPreviousIsFree", checkReleaseThenFree},
	{"LeaseStatusTransitions", checkLeaseStatus},
	{"HeartbeatKeepsLease", checkHeartbeat},
	{"OneHolderUnderContention", checkOneHolder},
	{"AcquireSeesLatestRevision", checkAcquireSeesLatest},

	// Reading (read.go).
	{"HistoryInOrderAndComplete", checkHistory},
	{"LoadRevisionOfEachRevision", checkLoadRevision},
	{"LoadAfterRelease", checkLoadAfterRelease},
	{"LoadedRecordIsCopy", checkLoadCopies},
	{"HistoryRecordsAreCopies", checkHistoryCopies},

	// Forking (read.go).
	{"ForkCopiesRevision", checkForkRevision},
	{"ForkOfForkKeepsRoot", checkForkRoot},
	{"ForkLatestWithRevisionZero", checkForkLatest},
	{"ForkMintsIDWhenEmpty", checkForkMints},
	{"ForkErrors", checkForkErrors},

	// Listing (list.go).
	{"ListPagingWhileAppendingSeesEachUnmodifiedSessionOnce", checkListPagingUnderAppends},
	{"ListFilterByState", checkListState},
	{"ListFilterByKind", checkListKind},
	{"ListFilterByParent", checkListParent},
	{"ListFilterUpdatedSince", checkListUpdatedSince},
	{"ListFilterByLabelsAndProject", checkListLabelsProject},
	{"ListOrders", checkListOrders},
	{"ListZeroQueryIsNewestFirst", checkListZeroQuery},
	{"ListBadCursorIsErrBadCursor", checkListBadCursor},
	{"ListInvalidQueryIsError", checkListInvalidQuery},
	{"ListSummaryFields", checkListSummary},
	{"IDsListsEverySessionInIDOrder", checkIDs},

	// Watching (watch.go).
	{"WatchStartsWithCurrentState", checkWatchInitial},
	{"WatchConvergesAndSeesDeletions", checkWatchConverges},
	{"WatchClosesOnContextCancel", checkWatchCancel},
	{"WatchClosesOnStoreClose", checkWatchStoreClose},
	{"WatchChangesCarryLeaseStatus", checkWatchLeaseInitial},
	{"WatchSeesRelease", checkWatchRelease},
	{"WatchSeesTakeover", checkWatchTakeover},
	{"WatchSeesHolderDeath", checkWatchDeath},

	// Invalid input (inputs.go).
	{"InvalidIDsAreErrInvalidID", checkInvalidIDs},
	{"OversizedSnapshotIsErrTooLarge", checkOversized},
	{"MismatchedSnapshotIDIsErrInvalidSnapshot", checkMismatchedID},
	{"InvalidSnapshotsAreErrInvalidSnapshot", checkInvalidSnapshots},
	{"UnknownIDIsErrNotFound", checkUnknownID},

	// Deleting, cancelling and closing (lifecycle.go).
	{"DeleteUnderLeaseThenCreateAgain", checkDelete},
	{"DeleteWakesWaitingAcquire", checkDeleteWakesWaiter},
	{"CancelledContextIsReturned", checkCancelledContext},
	{"ClosedStoreIsErrClosed", checkClosedStore},

	// Damaged sessions (damage.go).
	{"DamagedSessionIsReportedNeverSkipped", checkDamagedReported},

	// Large part content (content.go).
	{"LargeContentIsStoredOnce", checkContentStoredOnce},
	{"SessionLargerThanRecordCapAppends", checkLargerThanCap},
	{"ConversationLargerThanRecordCapAppends", checkConversationLargerThanCap},
	{"LoadWithoutContentKeepsReferences", checkLoadWithoutContent},
	{"ReferenceToContentNotHeldIsErrInvalidSnapshot", checkForeignReference},
	{"ForkKeepsContent", checkForkContent},
	{"LargeContentIsCopied", checkContentCopied},

	// Creating a session with its history (history.go).
	{"CreateHistoryStoresEveryRevision", checkCreateHistory},
	{"CreateHistoryRefusedCreatesNothing", checkCreateHistoryRefused},

	// Searching (search.go).
	{"SearchFindsTitlesPromptsRepliesAndToolOutput", checkSearchFields},
	{"SearchPhrasesAndPrefixes", checkSearchPhrases},
	{"SearchNoToolsLeavesToolsOut", checkSearchNoTools},
	{"SearchDeleteRemovesHits", checkSearchDelete},
	{"SearchSeesAnotherHandlesSessions", checkSearchOtherHandle},
	{"SearchFiltersByLabelsAndProject", checkSearchFilters},
	{"SearchRanksAndLimits", checkSearchRanking},
	{"SearchBadQueryIsErrBadQuery", checkSearchBadQuery},
	{"SearchAgreesWithHistoryOverSeeds", checkSearchSeeds},
}

// CheckNames returns the names of the suite's checks, as they appear as
// subtests of the test that calls Run.
func CheckNames() []string {
	var names []string
	for _, c := range checks {
		names = append(names, c.name)
	}
	return names
}
