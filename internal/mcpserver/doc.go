// Package mcpserver serves a store's history to coding agents over the
// Model Context Protocol (`sessions mcp`): tools that search past
// sessions, list them, and read one as Markdown or one message, so that
// an agent can look up what was said and done before.
//
//	srv := mcpserver.New(st, mcpserver.Options{Version: "v1"})
//	err := srv.Run(ctx, &mcp.StdioTransport{})
//
// It reads and never writes: the tools call the store's Search, List,
// LoadWith and ResolveID, so they take no lease and append nothing, and
// they work beside the sessions' live holders. (A search may bring the
// store's search index up to date first, as every search does.)
//
// Every answer is bounded: a search returns at most MaxHits hits, a
// listing at most MaxList sessions, a read at most MaxReadBytes bytes,
// and a result that was cut says so and where to go on. A failure — an
// unknown session, a bad ID or argument, a store that cannot answer —
// is a tool error (a result with isError set) whose text says what went
// wrong; the connection goes on.
package mcpserver
