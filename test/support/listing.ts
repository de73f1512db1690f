/** A listing document as the upstream sends it: the envelope around raw record texts, claiming `count` records. */
export const listing = (records: string[], count = records.length): string =>
  `{"message":"ok","count":${count},"bulk_wine_reconciliation":[${records.join(',')}],"recordCount":${count}}`;
