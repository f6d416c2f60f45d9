"""Oracle tests of burnbox/patches: each patch against the library it patches."""
