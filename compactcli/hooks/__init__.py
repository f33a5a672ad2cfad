"""Agent hooks: compacting a session the moment its agent says it ended, and installing that hook in the
agents' settings (docs/design.md, "Hooks")."""
