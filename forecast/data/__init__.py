"""The data: loaders and validators of the sourced CSV tables, the evidence tables of the scaling
laws, the ingest of new hardware rows, and the validated inputs of a run.
"""
