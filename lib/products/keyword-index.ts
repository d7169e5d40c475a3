// The `keyword` filter of the product lists: a case-insensitive contains-match on the name, served by the
// name index of migration 20261122000013 (FTS5 trigram on SQLite, product_name_trigrams on MySQL/MariaDB;
// triggers keep both in the writer's transaction). The index only narrows the candidates; the exact
// predicate the search always had stays the final check, so the index cannot change a result (but for the SQLite
// exception applyKeyword names).
import type { Knex } from 'knex';
import { whereContainsIgnoringCase } from '../query-helpers';

/** Trigrams need 3 characters; shorter keywords keep the plain scan (README, Catalog: Search). */
export const MIN_INDEXED_KEYWORD_LENGTH = 3;

/**
 * On MySQL, at most this many of the keyword's trigrams become semi-joins: each one narrows the candidates
 * further, but each costs a lookup per candidate, and the exact check after them decides anyway.
 */
const MAX_TRIGRAMS = 4;

/** Distinct 3-character substrings (by code point, as the database counts characters), spread over the keyword. */
export function keywordTrigrams(keyword: string): string[] {
  const chars = Array.from(keyword);
  const all = [...new Set(chars.slice(0, -2).map((_, i) => chars.slice(i, i + 3).join('')))];
  if (all.length <= MAX_TRIGRAMS) return all;
  // Evenly spread, first and last included: together they cover the keyword's whole length.
  return [
    ...new Set(
      Array.from(
        { length: MAX_TRIGRAMS },
        (_, i) => all[Math.round((i * (all.length - 1)) / (MAX_TRIGRAMS - 1))],
      ),
    ),
  ];
}

/** An FTS5 phrase: inside double quotes nothing is syntax but the quote itself, written twice. */
function ftsPhrase(keyword: string): string {
  return `"${keyword.replace(/"/g, '""')}"`;
}

/**
 * Adds the keyword predicate to a products query: the name contains the keyword, case ignored
 * (whereContainsIgnoringCase, the rule every search shares), narrowed first by the name index.
 */
export function applyKeyword(q: Knex.QueryBuilder, keyword: string, mysql: boolean): Knex.QueryBuilder {
  const lowered = keyword.toLowerCase();
  // The candidates are a superset of the exact matches: the FTS5 trigram tokenizer folds case (a coarser
  // equality than the exact check's), and the MySQL table holds the very substrings of LOWER(name) that the
  // exact check compares, byte for byte. On SQLite the exact check compares JavaScript's lowering of both
  // sides, so the index is asked for the keyword as sent and lowered: JavaScript's lowering is not the
  // tokenizer's folding ("İ" lowers to "i" and a combining dot, which the tokenizer never sees in an indexed
  // "İstanbul"). Known exception: capitals the tokenizer does not fold at all (Georgian Mtavruli, Cherokee,
  // some astral scripts) are found by their lower case in a 1-2 character scan but not through the index.
  // A spelling shorter than a trigram matches nothing in FTS5, so then the index is not used at all.
  const spellings = [...new Set([keyword, lowered])];
  if (spellings.every((s) => Array.from(s).length >= MIN_INDEXED_KEYWORD_LENGTH)) {
    if (mysql) {
      for (const trigram of keywordTrigrams(keyword))
        // LOWER(?) as the exact check and the table's triggers lower, so all compare the same characters.
        q.whereIn('id', (sub) =>
          sub.select('product_id').from('product_name_trigrams').whereRaw('trigram = LOWER(?)', [trigram]),
        );
    } else {
      // NOT INDEXED keeps SQLite from walking an index of products instead (without ANALYZE statistics it
      // believes `status IN (...)` is selective): products are then read by rowid from the FTS candidates,
      // so the cost follows the number of names holding the keyword's trigrams, not the catalogue's size.
      q.from(q.client.raw('?? NOT INDEXED', ['products']));
      q.whereRaw('id IN (SELECT rowid FROM products_name_fts WHERE products_name_fts MATCH ?)', [
        spellings.map(ftsPhrase).join(' OR '),
      ]);
    }
  }
  return applyKeywordCheck(q, keyword, mysql);
}

/** The exact predicate of the keyword filter alone (what decides a match; the index only narrows). */
export function applyKeywordCheck(q: Knex.QueryBuilder, keyword: string, mysql: boolean): Knex.QueryBuilder {
  return whereContainsIgnoringCase(q, 'name', keyword, mysql);
}
