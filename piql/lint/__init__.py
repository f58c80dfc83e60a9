"""``piql lint`` as a CI tool: rule selection and suppression (:mod:`.findings`), project
configuration (:mod:`.config`) and the command itself (:mod:`.command`)."""
