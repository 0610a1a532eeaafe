import { describe, expect, it } from 'vitest'
import { addressBucket, canonicalAddress, inNetworks, isCidr, networkMatcher } from '../../src/networks.ts'

describe('networks', () => {
  it.each([
    '10.0.0.0/8',
    '192.168.1.1',
    '0.0.0.0/0',
    '::/0',
    'fd00::/8',
    '2001:db8::1',
    '::ffff:10.0.0.0/104',
    '[::1]',
  ])('accepts %s', (value) => expect(isCidr(value)).toBe(true))

  it.each([
    '',
    '10.0.0.0/33',
    '10.0.0',
    '0x7f.1',
    '010.1.1.1/8 ',
    'example.com',
    'fd00::/129',
    '10.0.0.0/8/8',
    '10.0.0.0/-1',
    '10.0.0.0/',
    '::1/a',
  ])('rejects %j', (value) => expect(isCidr(value)).toBe(false))

  it('matches IPv4, IPv6 and IPv4-mapped addresses; never an unknown or malformed one', () => {
    const match = networkMatcher(['10.0.0.0/8', '2001:db8::/32', '192.0.2.10'])
    expect(match('10.255.0.1')).toBe(true)
    expect(match('11.0.0.1')).toBe(false)
    expect(match('::ffff:10.1.1.1')).toBe(true)
    expect(match('::ffff:11.1.1.1')).toBe(false)
    expect(match('2001:db8:1::5')).toBe(true)
    expect(match('2001:db9::5')).toBe(false)
    expect(match('192.0.2.10')).toBe(true)
    expect(match('192.0.2.11')).toBe(false)
    expect(match(undefined)).toBe(false)
    expect(match('not an address')).toBe(false)
    expect(match('')).toBe(false)
  })

  it('an IPv4 range never matches an IPv6 address outside the mapped space', () => {
    expect(inNetworks('::a00:1', ['10.0.0.0/8'])).toBe(false)
    expect(inNetworks('::ffff:a00:1', ['10.0.0.0/8'])).toBe(true)
  })
})

describe('canonical addresses and throttling buckets', () => {
  it.each([
    ['10.0.0.1', '10.0.0.1'],
    ['::ffff:10.0.0.1', '10.0.0.1'],
    ['2001:0db8:0000:0000:0000:0000:0000:0001', '2001:db8::1'],
    ['[::1]', '::1'],
    ['010.0.0.1', undefined],
    ['256.1.1.1', undefined],
    ['1.2.3.4 5.6.7.8', undefined],
    ['not an address', undefined],
  ])('canonicalAddress(%j) is %j', (input, expected) => expect(canonicalAddress(input)).toBe(expected))

  it('buckets IPv6 by /64 and keeps IPv4 whole', () => {
    expect(addressBucket('192.0.2.7')).toBe('192.0.2.7')
    expect(addressBucket('2001:db8:1:2::5')).toBe('2001:db8:1:2::/64')
    expect(addressBucket('2001:db8:1:2:ffff:ffff:ffff:ffff')).toBe('2001:db8:1:2::/64')
  })
})
