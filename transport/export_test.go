package transport

// SetSendfileMin sets the smallest file section the writer sends with
// sendfile (smaller ones are copied) and returns the previous value; for
// benchmarks comparing the two paths.
func SetSendfileMin(n int64) int64 { return sendfileMin.Swap(n) }
