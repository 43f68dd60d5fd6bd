package layout

import "github.com/sessionstore/sessionstore/jsonlstore/maintenance"

// The store's sentinel errors are package maintenance's (jsonlstore
// exports each under the same name). ErrBackupInsideStore is the one
// the offline tools name through this package.
var ErrBackupInsideStore = maintenance.ErrBackupInsideStore
