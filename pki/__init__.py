"""Session identity: SPIFFE IDs (`spiffe`), the edge policy (`edges`), SVID checks (`svid`), certificate
building (`issue`), PEM delivery and loading (`bundle`), the CA child (`ca`) and test support (`testing`);
and the project's vocabulary (`vocabulary`), which the launcher, the doors and pki all import.

Nothing is re-exported here, so a door that imports `pki.svid` never loads the CA child's code, and
importing `pki.vocabulary` loads nothing else of the project.
"""
