"""Who may do what: grants and roles, URI sources and policies, permission profiles."""
