package mcp

// ServerHasStream reports whether some HTTP session of s has its
// standalone stream open, for tests that must wait for it.
func ServerHasStream(s *Server) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, ss := range s.httpByID {
		ss.mu.Lock()
		open := ss.notify != nil
		ss.mu.Unlock()
		if open {
			return true
		}
	}
	return false
}
