// Package catalog is the codec of the file store's catalog: one file under
// the store root that holds every session's summary, so that a fresh
// process lists the first page of ten thousand sessions by reading it
// instead of ten thousand summary.json files. It knows the bytes only;
// what the store trusts of them, and when, is package catalogfile's (the
// trust rules). It must never read a session or the store root.
//
// # Layout
//
//	ROOT/.catalog/             0700
//	  catalog                  0600  header, entries, summaries (File)
//	  root                     0600  the root directory as a catalog last saw it (Root)
//	  lock                     0600  flock target of whoever rewrites catalog; never deleted
//	  marks/                   0700
//	    <id>.<generation>      0600  empty: session <id> was acquired with <generation> (MarkName)
//	  .catalog-<16 hex>.tmp    a catalog being written
//	  .root-<16 hex>.tmp       a root file being written
//
// # The catalog file
//
// Integers are little-endian; the times of the header and of files (mtime,
// ctime) are nanoseconds since 1970 (UTC).
//
//	header (HeaderSize bytes)
//	  0  8  magic "SESSCAT\x00"
//	  8  4  version (Version)
//	 12  4  entry count
//	 16  8  catalog ID: random, never 0; names this file in the root file
//	 24  8  written at
//	 32  8  marks directory: device
//	 40  8  marks directory: inode
//	 48  4  kept marks: how many
//	 52  4  CRC-32C of the entries section
//	 56  8  entries section: length in bytes
//	 64  8  summaries section: length in bytes
//	 72  8  kept marks section: length in bytes
//	 80  4  CRC-32C of the kept marks section
//	 84  4  CRC-32C of header bytes 0–83
//	entries section: the entries, in strictly increasing ID byte order
//	   0  4  entry length in bytes, this field included
//	   4  1  flags: bit 0 set for a session that could not be read; others 0
//	   5  8  log device     ┐
//	  13  8  log inode      │ the log.jsonl the entry was computed from
//	  21  8  log size       │
//	  29  8  log mtime      ┘
//	  37  8  revision
//	  45  8  created at: seconds since 1970 (two's complement)
//	  53  4  created at: nanoseconds (below 10^9)
//	  57  8  updated at: seconds
//	  65  4  updated at: nanoseconds
//	  69  8  summary: offset in the summaries section
//	  77  4  summary: length
//	  81  4  summary: CRC-32C
//	  85  1+n   ID             (length byte, then the bytes)
//	      1+n   state
//	      1+n   kind
//	      1+n   parent ID
//	      2+n   project        (two length bytes)
//	      1     label count, then per label: 1+n key, 2+n value
//	kept marks section: the names of the marks the writer left in place
//	  (their sessions were held), in strictly increasing byte order, each
//	  1+n bytes
//	summaries section: each entry's summary, one after another: the JSON
//	  of its summary.Summary (lease empty), or, for a session that could
//	  not be read, why (UTF-8 text)
//
// The file's length is exactly HeaderSize plus the three sections. Anything else
// — another magic, a checksum that does not match, an entry whose fields
// overrun it, IDs out of order — is a damaged file (ErrDamaged); a version
// above Version is a newer program's (ErrNewer). Readers treat either as no
// catalog at all.
//
// # The root file
//
//	 0  8  magic "SESSROOT"
//	 8  4  version (Version)
//	12  8  the catalog ID it speaks for
//	20  8  root directory: device
//	28  8  root directory: inode
//	36  8  root directory: link count
//	44  8  root directory: size
//	52  8  root directory: mtime
//	60  8  root directory: ctime
//	68  8  observed at
//	76  4  CRC-32C of bytes 0–75
package catalog
