package engine

// NamespaceDefault is the namespace used when none is configured.
const NamespaceDefault = "default"
