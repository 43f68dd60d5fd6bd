package cli

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"strings"

	"github.com/sessionstore/sessionstore/jsonlstore"
	"github.com/sessionstore/sessionstore/jsonlstore/fts"
	"github.com/sessionstore/sessionstore/redact"
)

// Exit statuses, the same for every command.
const (
	// ExitOK: done; for a command that checks (verify, repair, backup),
	// every record checks out.
	ExitOK = 0
	// ExitFail: an error kept the command from doing its work (no store,
	// an unknown session, a held lease, an I/O error).
	ExitFail = 1
	// ExitUsage: bad flags or arguments; nothing was done.
	ExitUsage = 2
	// ExitCorrupt: a command that checks did its work and found
	// corruption.
	ExitCorrupt = 3
	// ExitNewer: verify found nothing corrupt, but records written by a
	// newer version, which it could not check.
	ExitNewer = 4
	// ExitSecrets: scan did its work and found secrets.
	ExitSecrets = 5
)

// ExitStatusHelp documents the exit statuses, for usage texts.
const ExitStatusHelp = `Exit status: 0 done (verify, repair, backup: every record checks out);
1 an error kept the command from doing its work (no store, an unknown
session, a held lease, an I/O error); 2 bad flags or arguments, nothing
done; 3 verify, repair, backup: done, and corruption was found; 4 verify:
nothing corrupt, but records written by a newer version, not checked.`

// StoreDir is the store a command uses: flagDir when given, else
// $SESSIONSTORE_DIR, else the XDG data directory (jsonlstore.DefaultDir).
// It may be a postgres:// URL (IsDSN).
func StoreDir(flagDir string) (string, error) {
	if flagDir != "" {
		return flagDir, nil
	}
	return jsonlstore.DefaultDir()
}

// IsDSN reports whether store names a PostgreSQL database.
func IsDSN(store string) bool {
	return strings.HasPrefix(store, "postgres://") || strings.HasPrefix(store, "postgresql://")
}

// Location is store as messages may print it: a DSN with its password
// (in the user information or a password parameter) replaced by xxxxx, a
// directory as it is.
func Location(store string) string {
	if !IsDSN(store) {
		return store
	}
	u, err := url.Parse(store)
	if err != nil {
		return "the PostgreSQL store (an unparsable URL)"
	}
	if _, ok := u.User.Password(); ok {
		u.User = url.UserPassword(u.User.Username(), "xxxxx")
	}
	q := u.Query()
	changed := false
	for k := range q {
		if strings.EqualFold(k, "password") {
			q[k] = []string{"xxxxx"}
			changed = true
		}
	}
	if changed {
		u.RawQuery = q.Encode()
	}
	return u.String()
}

// WarnLogger reports a store's warnings (a corrupt session skipped by a
// listing, …) on w, without timestamps.
func WarnLogger(w io.Writer) *slog.Logger {
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{
		Level: slog.LevelWarn,
		ReplaceAttr: func(groups []string, a slog.Attr) slog.Attr {
			if len(groups) == 0 && a.Key == slog.TimeKey {
				return slog.Attr{}
			}
			return a
		},
	}))
}

// OpenDir opens the directory store at dir for a command, with its
// search index (fts), so that every command searches, verifies and
// feeds the index as the store's users expect. Only commands
// that write a new store (demo) create a missing one; the others say
// that there is none (jsonlstore.ErrNoStore, with NoStoreHint) and create
// nothing.
func OpenDir(dir string, create bool, stderr io.Writer) (*jsonlstore.Store, error) {
	return OpenDirRedacting(dir, create, stderr, nil)
}

// OpenDirRedacting is OpenDir with the Redactor the store writes with
// (nil: the default rules).
func OpenDirRedacting(dir string, create bool, stderr io.Writer, red *redact.Redactor) (*jsonlstore.Store, error) {
	opts := jsonlstore.Options{Logger: WarnLogger(stderr), Search: fts.New(), Redactor: red}
	if create {
		return jsonlstore.Open(dir, opts)
	}
	st, err := jsonlstore.OpenExisting(dir, opts)
	if errors.Is(err, jsonlstore.ErrNoStore) {
		return nil, fmt.Errorf("%w (%s)", err, NoStoreHint)
	}
	return st, err
}

// NoStoreHint is what to say after jsonlstore.ErrNoStore.
const NoStoreHint = "use --dir, or set SESSIONSTORE_DIR"
