# hobbs-init.sh — sourced at shell start inside the Hobbs container.
# (Skill and agent linking is added by the identity/skills issue.)
:
