"""The parts of the answer check (`docket.check`): sentences and citations, facts, links."""
